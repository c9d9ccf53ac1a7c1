# frozen_string_literal: true

# `rake spec:valgrind`: the spec suite under valgrind's memcheck, through
# ruby_memcheck, which filters out Ruby's own never-freed memory and reports only
# leaks and invalid accesses whose stack passes through the extension.
# ruby_memcheck is in the Gemfile's bench group.
begin
  require "ruby_memcheck"
  require "ruby_memcheck/rspec/rake_task"

  RubyMemcheck.config(binary_name: "llm_failover",
                      valgrind_suppressions_dir: File.expand_path("valgrind", __dir__))

  namespace :spec do
    desc "Run the spec suite under valgrind (ruby_memcheck); fails on a leak or invalid access in the extension"
    RubyMemcheck::RSpec::RakeTask.new(valgrind: :compile) do |t|
      t.rspec_opts = ENV["SPEC_VALGRIND_OPTS"] if ENV["SPEC_VALGRIND_OPTS"]
    end
  end
rescue LoadError => e
  namespace :spec do
    desc "Run the spec suite under valgrind (needs the bench group: bundle install)"
    task :valgrind do
      abort "spec:valgrind needs ruby_memcheck (#{e.message}); run `bundle install` with the bench group"
    end
  end
end
