# frozen_string_literal: true

require "rbconfig"
require "set"

# `rake cycles`: no two C files of the core call each other, directly or round a
# longer cycle. Two files that do are one module cut in half (STYLE.md). Read from
# `nm` of the core's objects: the file that defines each global symbol, and the files
# that leave it undefined (use it). `rake ctest` runs it on the objects it built.
module LfCycles
  CORE = "ext/llm_failover/core"
  BUILD = "tmp/cycles"

  # Cycles let through for now, each named by its files, with the branch removing it.
  # None: the last one, {lf_failover.c, lf_hedge.c}, went when the hedge's bookkeeping
  # moved to lf_attempt_finish.c, where the attempt's is (issue 34).
  ALLOWED = [].freeze

  module_function

  # @return [Hash{String => Set<String>}] each file and the files whose symbols it uses
  def graph(objects)
    defines = {}
    uses = {}
    objects.each do |obj|
      file = "#{File.basename(obj, '.o')}.c"
      uses[file] = []
      out = IO.popen(["nm", "-P", "-g", obj], &:read)
      abort "rake cycles: nm #{obj} failed" unless $?.success?
      out.each_line do |line|
        name, type = line.split
        if %w[U w v].include?(type)
          uses[file] << name
        else
          defines[name] = file
        end
      end
    end
    uses.to_h { |file, names| [file, names.filter_map { |n| defines[n] }.to_set - [file]] }
  end

  # Tarjan's strongly connected components of more than one file.
  # @return [Array<Array<String>>]
  def cycles(graph)
    index = {}
    low = {}
    stack = []
    on_stack = Set.new
    found = []
    visit = lambda do |v|
      index[v] = low[v] = index.size
      stack << v
      on_stack << v
      graph.fetch(v, []).each do |w|
        if !index.key?(w)
          visit.call(w)
          low[v] = [low[v], low[w]].min
        elsif on_stack.include?(w)
          low[v] = [low[v], index[w]].min
        end
      end
      return unless low[v] == index[v]

      component = []
      loop do
        w = stack.pop
        on_stack.delete(w)
        component << w
        break if w == v
      end
      found << component.sort if component.size > 1
    end
    graph.keys.sort.each { |v| visit.call(v) unless index.key?(v) }
    found.sort
  end

  # Prints what it found; aborts on a cycle that is not allowed.
  def check(objects)
    abort "rake cycles: no objects" if objects.empty?
    g = graph(objects)
    found = cycles(g)
    allowed, bad = found.partition { |c| ALLOWED.include?(c.to_set) }
    puts "rake cycles: #{g.size} core files, #{g.values.sum(&:size)} file-to-file uses, " \
         "#{found.size} cycle(s)"
    allowed.each { |c| puts "  allowed for now: {#{c.join(', ')}} (see rakelib/cycles.rake)" }
    (ALLOWED - found.map(&:to_set)).each do |c|
      puts "  no longer a cycle, drop it from ALLOWED: {#{c.to_a.join(', ')}}"
    end
    bad.each do |c|
      puts "  CYCLE: {#{c.join(', ')}}"
      c.each { |f| puts "    #{f} uses #{(g[f] & c).sort.join(', ')}" }
    end
    abort "rake cycles: C files of the core call each other in a circle" unless bad.empty?
  end

  # The core compiled without instrumentation, for `rake cycles` on its own.
  def build
    FileUtils.rm_rf(BUILD)
    FileUtils.mkdir_p(BUILD)
    flags = `pkg-config --cflags libcurl json-c 2>/dev/null`.strip
    Dir["#{CORE}/*.c"].sort.map do |src|
      obj = "#{BUILD}/#{File.basename(src, '.c')}.o"
      system("cc -std=gnu11 -O1 -I#{CORE} #{flags} -c -o #{obj} #{src}", exception: true)
      obj
    end
  end
end

desc "Fail when two C files of the core call each other in a circle (nm of their objects)"
task :cycles do
  LfCycles.check(LfCycles.build)
end

# After the C tests, on the objects they were linked from.
Rake::Task[:ctest].enhance { LfCycles.check(Dir["tmp/ctest/core/*.o"].sort) }
