# frozen_string_literal: true

require "etc"

# `rake fuzz`: every libFuzzer target fuzz/fuzz_NAME.c, built with clang
# (-fsanitize=fuzzer,address,undefined) against the whole C core, seeded from the
# recorded traffic by its seed script, first replays the inputs that once crashed
# it (test/c/fuzz/NAME/), then runs for FUZZ_SECONDS (default 30) each.
#
#   FUZZ_SECONDS=10 bundle exec rake fuzz     # what CI runs
#   FUZZ_TARGETS=sse bundle exec rake fuzz    # one target
#
# A crash fails the task and leaves its input in tmp/fuzz/crashes/NAME/. Every crash
# becomes a regression: copy the input to test/c/fuzz/NAME/ (replayed here on every
# run) and add a test/c test that feeds the same bytes to the function that failed.
module LfFuzz
  extend FileUtils
  extend Rake::FileUtilsExt
  DIR = "fuzz"
  BUILD = "tmp/fuzz"
  CORE = "ext/llm_failover/core"
  CFLAGS = "-g -O1 -std=gnu11 -fno-sanitize-recover=all -fno-omit-frame-pointer -I#{CORE}"

  module_function

  # FUZZ_CC, else clang, else the newest clang-NN on PATH (Debian 12 installs clang-14 alone).
  def clang
    versioned = ENV["PATH"].split(File::PATH_SEPARATOR).flat_map { |d| Dir[File.join(d, "clang-[0-9]*")] }
                           .map { |f| File.basename(f) }.grep(/\Aclang-\d+\z/).uniq
                           .sort_by { |c| -c.delete_prefix("clang-").to_i }
    ENV["FUZZ_CC"] || ["clang", *versioned].find { |c| system("command -v #{c} >/dev/null 2>&1") } ||
      abort("rake fuzz: clang not found; on Debian: apt-get install clang libclang-rt-dev (bin/setup --fuzz)")
  end

  def targets
    all = Dir["#{DIR}/fuzz_*.c"].sort.map { |f| File.basename(f, ".c").delete_prefix("fuzz_") }
    only = ENV["FUZZ_TARGETS"]&.split(",")
    only ? all & only : all
  end

  # fuzz/seed_NAME.rb, or the seed script that writes corpus_NAME (fuzz/seed.rb for sse).
  def seed_script(name)
    own = "#{DIR}/seed_#{name}.rb"
    return own if File.exist?(own)

    Dir["#{DIR}/seed*.rb"].find { |f| File.read(f).include?("corpus_#{name}") }
  end

  # The whole core, compiled once per run with the targets' instrumentation (coverage
  # for libFuzzer, ASan, UBSan), as many files at once as there are cores: each target
  # links every object, and the linker keeps what it needs.
  # @return [Array<String>] the object files
  def build_core
    dir = "#{BUILD}/core"
    rm_rf dir
    mkdir_p dir
    sources = Dir["#{CORE}/*.c"].sort
    objects = sources.map { |src| "#{dir}/#{File.basename(src, '.c')}.o" }
    queue = Queue.new
    sources.zip(objects).each { |pair| queue << pair }
    queue.close
    Array.new(Etc.nprocessors) do
      Thread.new do
        while (src, obj = queue.pop)
          sh "#{clang} #{CFLAGS} -fsanitize=fuzzer-no-link,address,undefined -c -o #{obj} #{src} " \
             "#{`pkg-config --cflags json-c libcurl`.strip}"
        end
      end
    end.each(&:value) # a failed compile raises here
    objects
  end

  def build(name, core)
    exe = "#{BUILD}/fuzz_#{name}"
    flags = `pkg-config --cflags --libs json-c libcurl`.strip
    sh "#{clang} #{CFLAGS} -fsanitize=fuzzer,address,undefined -o #{exe} #{DIR}/fuzz_#{name}.c #{core.join(' ')} " \
       "#{flags} -lm"
    exe
  end

  def run(name, seconds, core)
    exe = build(name, core)
    corpus = "#{BUILD}/corpus_#{name}"
    crashes = "#{BUILD}/crashes/#{name}/"
    mkdir_p corpus
    mkdir_p crashes
    script = seed_script(name)
    sh RbConfig.ruby, script, "spec/fixtures/recorded", corpus if script
    env = "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1"
    regressions = Dir["test/c/fuzz/#{name}/*"].sort
    sh "#{env} #{exe} #{regressions.join(' ')}" unless regressions.empty?
    dict = "#{DIR}/#{name}.dict"
    opts = ["-max_total_time=#{seconds}", "-max_len=#{ENV.fetch('FUZZ_MAX_LEN', '8192')}",
            "-artifact_prefix=#{crashes}", "-print_final_stats=1", "-rss_limit_mb=2048", "-timeout=10"]
    opts << "-dict=#{dict}" if File.exist?(dict)
    # A scratch copy of the corpus: the seeds stay as the script wrote them, and
    # what the run finds stays under tmp/ only.
    work = "#{BUILD}/work_#{name}"
    rm_rf work
    mkdir_p work
    log = "#{BUILD}/fuzz_#{name}.log"
    sh "#{env} #{exe} #{opts.join(' ')} #{work} #{corpus} > #{log} 2>&1" do |ok, _|
      puts File.readlines(log).last(ok ? 12 : 60).join
      found = Dir["#{crashes}*"]
      abort "rake fuzz: fuzz_#{name} failed (#{found.size} input(s) kept: #{found.join(' ')})" unless ok && found.empty?
    end
  end
end

desc "Run each libFuzzer target (fuzz/fuzz_*.c) for FUZZ_SECONDS (default 30) seeded from the recorded traffic"
task :fuzz do
  seconds = Integer(ENV.fetch("FUZZ_SECONDS", "30"))
  targets = LfFuzz.targets
  abort "rake fuzz: no targets under fuzz/" if targets.empty?
  mkdir_p LfFuzz::BUILD # a fresh clone has no tmp/
  core = LfFuzz.build_core
  targets.each { |name| LfFuzz.run(name, seconds, core) }
end
