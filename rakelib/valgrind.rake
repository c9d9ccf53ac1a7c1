# frozen_string_literal: true

# `rake spec:valgrind`: the spec suite under valgrind's memcheck, through
# ruby_memcheck, which filters out Ruby's own never-freed memory and reports only
# leaks and invalid accesses whose stack passes through the extension.
# ruby_memcheck is in the Gemfile's bench group.
begin
  require "ruby_memcheck"
  require "ruby_memcheck/rspec/rake_task"

  # Processes the specs spawn (exec: the SIGINT spec's ruby, the CLI and demo specs)
  # run outside valgrind: under it they outlast the specs' 10 s waits, and without
  # ruby_memcheck's helper loaded every Ruby object they leave at exit is reported as
  # a leak. The spec process itself and its forked children stay under valgrind.
  #
  # Ruby below 3.4 does not free its heap at exit, so ruby_memcheck guesses: a block
  # reported lost whose stack reaches the extension before any of these Ruby functions
  # counts as the extension's. The functions added here make Ruby objects: their
  # memory belongs to the GC, which frees it when the object dies, so the extension
  # cannot leak it, only keep the object alive. An object that is still alive at exit
  # shows as lost all the same, and which ones survive depends on the spec order, since
  # Ruby's stack scan is conservative: with --seed 12126 the results Array of
  # spec/active_record/threads_spec.rb (18 Replies, their request ids and attempt
  # messages) was still alive at exit, held by no heap object. What the extension
  # allocates itself (malloc, libcurl, json-c) has no Ruby frame in between and is
  # still reported.
  object_constructors = [
    /\Arb_(utf8_|usascii_|enc_)?str_new/, /\Arb_enc_interned_str/, /\Arb_ary_new/, /\Arb_hash_new/,
    /\Arb_hash_bulk_insert/, /\Arb_time_nano_new\z/
  ].freeze
  RubyMemcheck.config(binary_name: "llm_failover",
                      skipped_ruby_functions: RubyMemcheck::Configuration::DEFAULT_SKIPPED_RUBY_FUNCTIONS +
                                              object_constructors,
                      valgrind_suppressions_dir: File.expand_path("valgrind", __dir__),
                      valgrind_options: RubyMemcheck::Configuration::DEFAULT_VALGRIND_OPTIONS +
                                        ["--trace-children-skip=*"])

  # A process forked to exec one of those children leaves an XML file that stops
  # where the exec began (nothing ran in it but the fork); ruby_memcheck would fail
  # to parse it. Only complete files are read.
  module LfValgrindCompleteXml
    def valgrind_xml_files
      @valgrind_xml_files ||= super.select do |file|
        File.open(file) do |f|
          f.seek([f.size - 64, 0].max)
          f.read.include?("</valgrindoutput>")
        end
      end.freeze
    end
  end
  RubyMemcheck::TestTaskReporter.prepend(LfValgrindCompleteXml)

  # ruby_memcheck knows Ruby's frames by the library name libruby.so.3.1.2; Debian
  # names it libruby-3.1.so.3.1.2, and without this every Ruby allocation made in
  # Ruby code the extension calls back (a listener, a user's block) would be blamed
  # on the extension.
  module LfValgrindDebianLibruby
    def in_ruby?
      super || (!obj.nil? && File.basename(obj).match?(/\Alibruby-\d+\.\d+\.so\./))
    end
  end
  RubyMemcheck::Frame.prepend(LfValgrindDebianLibruby)

  namespace :spec do
    desc "Run the spec suite under valgrind (ruby_memcheck); fails on a leak or invalid access in the extension"
    RubyMemcheck::RSpec::RakeTask.new(valgrind: :compile) do |t|
      # Left out: spec/stress_spec.rb forks while eight threads are inside calls. In
      # the child those threads do not exist, so what their calls had allocated is
      # unreachable there and valgrind reports it as lost in every child; the parent
      # frees it. The fork spec of engine_spec.rb (no call in flight) stays in.
      t.exclude_pattern = "spec/stress_spec.rb"
      t.rspec_opts = ENV["SPEC_VALGRIND_OPTS"] if ENV["SPEC_VALGRIND_OPTS"]
    end
  end
rescue LoadError => e
  namespace :spec do
    desc "Run the spec suite under valgrind (needs the bench group: bin/setup --bench)"
    task :valgrind do
      abort "spec:valgrind needs ruby_memcheck (#{e.message}); run bin/setup --bench"
    end
  end
end
