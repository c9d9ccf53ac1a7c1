# frozen_string_literal: true

require "rbconfig"

# `rake sanitize`: the C core's unit tests under ASan/UBSan (the Rakefile's ctest),
# then the whole extension built with LLM_FAILOVER_SANITIZE=1 (extconf adds
# -fsanitize=address,undefined) and the specs that reach it run against it
# (sanitize:spec says which).
#
# Ruby itself is not instrumented, so the sanitizer runtimes are preloaded
# (LD_PRELOAD) and only the extension's code is checked. The sanitized build lives in
# tmp/sanitize/ and is loaded ahead of lib/llm_failover/llm_failover.so, which stays
# untouched. ASAN_OPTIONS, and why:
#   detect_leaks=0                 Ruby does not free its heap at exit: LeakSanitizer
#                                  would report all of it (rake spec:valgrind finds
#                                  the extension's own leaks instead)
#   detect_stack_use_after_return=0  a fake stack would hide VALUEs in C locals from
#                                  Ruby's conservative stack scan
#   use_sigaltstack=0              Ruby manages its threads' alternate signal stacks;
#                                  ASan's own cannot be unmapped when a thread exits
module LfSanitize
  BUILD = "tmp/sanitize/build"
  PRELOAD = "tmp/sanitize/preload.rb"

  module_function

  def runtime(name)
    path = `#{RbConfig::CONFIG['CC'] || 'cc'} -print-file-name=#{name}`.strip
    abort "rake sanitize: #{name} not found (Debian: apt-get install gcc)" unless path.start_with?("/") && File.exist?(path)
    File.realpath(path)
  end

  def preload_script
    <<~RUBY
      # Written by rake sanitize: loads the sanitized extension in place of lib's.
      require File.expand_path("../../lib/llm_failover/version", __dir__)
      require File.expand_path("../../lib/llm_failover/errors", __dir__)
      require File.expand_path("build/llm_failover.so", __dir__)
      $LOADED_FEATURES << File.expand_path("../../lib/llm_failover/llm_failover.so", __dir__)
    RUBY
  end
end

namespace :sanitize do
  desc "Build the extension with LLM_FAILOVER_SANITIZE=1 into tmp/sanitize/build"
  task :build do
    rm_rf LfSanitize::BUILD
    mkdir_p LfSanitize::BUILD
    extconf = File.expand_path("ext/llm_failover/extconf.rb")
    Dir.chdir(LfSanitize::BUILD) do
      sh({ "LLM_FAILOVER_SANITIZE" => "1" }, RbConfig.ruby, extconf)
      sh "make -j2 >make.log 2>&1 || (cat make.log; exit 1)"
    end
    File.write(LfSanitize::PRELOAD, LfSanitize.preload_script)
  end

  desc "Run the specs that reach the extension (SPEC=... for some files) against the sanitized extension"
  task spec: :build do
    env = {
      "LD_PRELOAD" => [LfSanitize.runtime("libasan.so"), LfSanitize.runtime("libubsan.so")].join(" "),
      "ASAN_OPTIONS" => "detect_leaks=0:detect_stack_use_after_return=0:use_sigaltstack=0:abort_on_error=1",
      "UBSAN_OPTIONS" => "print_stacktrace=1:halt_on_error=1"
    }
    files = ENV["SPEC"] ? ENV["SPEC"].split : []
    # Which specs run here: those that drive the extension in ways no other spec does.
    # The rest ran against the normal build in `rake spec` already, and running them
    # again here doubled CI's spec time for nothing the sanitizers could see. Left out:
    # - :rails_app: the app runs in child processes that load the normal build, not
    #   this one;
    # - :ruby_only: a group whose examples exercise Ruby (ActiveRecord rows, reports,
    #   configuration, the CLI and docs in child processes, FakeProvider itself,
    #   observability hooks), whose calls into the extension take paths the engine,
    #   streaming, cancel, stopped-call, hedge, tool, attachment, cache, index, scrubber,
    #   JSON, quota and state-store specs take already. Every ActiveRecord group is
    #   :ruby_only unless it says ruby_only: false (ArSpec.describe), as the
    #   ActiveRecordIndex one does (it drives the C vector index).
    # A new spec without the tag runs here: tag it :ruby_only only when every call it
    # makes into the extension is one another spec here makes too.
    files += %w[--tag ~rails_app --tag ~ruby_only] unless ENV["SPEC"]
    # Ruby 3.1 switches fiber stacks without telling ASan (no
    # __sanitizer_start_switch_fiber), and an exception unwinding a fiber's stack
    # leaves that stack's shadow poisoned ("ASan is ignoring requested
    # __asan_handle_no_return", google/sanitizers#189): a later fiber on the same
    # memory then fails a write to its own locals. The core's scheduler path is
    # covered under ASan by the C tests, which run every failover case both ways.
    files += %w[--tag ~fiber_scheduler] unless ENV["SPEC"]
    # GCC 12's ASan takes no allocator locks around fork(2): a child forked while
    # another thread is in malloc waits for ever on the allocator's mutex. The examples
    # that fork while other threads work (MemoryIndex's scans and adds, the streaming
    # workers of threads_kills_and_forks_spec.rb) run against the normal build instead.
    files += %w[--tag ~fork_beside_threads] unless ENV["SPEC"]
    # The examples tagged :timing check which calls fall inside a short circuit cooldown;
    # the sanitizers slow every call, and on a loaded machine the calls outlast it (as
    # under valgrind). They run against the normal build, and their calls into the
    # extension are those of the other circuit examples here.
    files += %w[--tag ~timing] unless ENV["SPEC"]
    sh env, RbConfig.ruby, "-r./#{LfSanitize::PRELOAD}", "-S", "rspec", *files
  end
end

desc "C tests under ASan/UBSan, then the spec suite against the extension built with ASan/UBSan"
task sanitize: %i[ctest sanitize:spec]
