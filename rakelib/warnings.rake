# frozen_string_literal: true

require "etc"
require "open3"
require "rbconfig"

# `rake warnings`: what a newer compiler and a newer Ruby would make of the gem, asked of
# the ones installed (CI runs it on Debian 12 and on Debian 13's GCC 14 and Ruby 3.3):
# - warnings:compile builds the extension afresh in tmp/warnings, with the flags of a
#   normal build, and fails on any compiler warning (the core's C tests build with
#   -Wextra -Werror already);
# - warnings:deprecated parses every Ruby file of the gem and runs the demos with
#   -W:deprecated, and fails when a warning names one of the gem's files. The spec suite
#   does the same for every path it takes (spec/support/gem_warnings.rb).
module LfWarnings
  module_function

  # @return [Array<String>] the lines of +output+ that name a file of the gem's own
  def own(output)
    roots = %w[lib exe ext].map { |d| File.expand_path(d) }
    output.lines.select { |line| roots.any? { |r| line.include?(r) } || line.match?(%r{\A(lib|exe|ext)/}) }
  end

  def check(what, lines)
    abort "rake warnings: #{what}:\n#{lines.join}" unless lines.empty?
    puts "rake warnings: #{what}: none"
  end
end

namespace :warnings do
  desc "Build the extension afresh (tmp/warnings) and fail on any compiler warning"
  task :compile do
    dir = "tmp/warnings"
    rm_rf dir
    mkdir_p dir
    extconf = File.expand_path("ext/llm_failover/extconf.rb")
    output = Dir.chdir(dir) do
      sh "#{RbConfig.ruby} #{extconf} >extconf.log 2>&1 || (cat extconf.log; exit 1)"
      out, status = Open3.capture2e("make", "-j#{Etc.nprocessors}", "V=1")
      abort "rake warnings: make failed:\n#{out}" unless status.success?
      out
    end
    LfWarnings.check("compiler warnings (#{`#{RbConfig::CONFIG['CC']} --version`.lines.first.strip})",
                     output.lines.grep(/warning:/i))
  end

  desc "Parse the gem's Ruby files and run the demos with -W:deprecated; fail on a warning naming the gem's files"
  task deprecated: :compile_extension do
    parse = "Dir['lib/**/*.rb', 'exe/*'].each { |f| RubyVM::InstructionSequence.compile_file(f) }"
    runs = [
      [RbConfig.ruby, "-W:deprecated", "-e", parse],
      [RbConfig.ruby, "-W:deprecated", "-Ilib", "exe/llm_failover", "demo"],
      [RbConfig.ruby, "-W:deprecated", "-Ilib", "exe/llm_failover", "demo", "--tools"],
      [RbConfig.ruby, "-W:deprecated", "-Ilib", "exe/llm_failover", "demo", "--hosts"]
    ]
    lines = runs.flat_map do |argv|
      out, status = Open3.capture2e(*argv)
      abort "rake warnings: #{argv.join(' ')} failed:\n#{out}" unless status.success?
      LfWarnings.own(out)
    end
    LfWarnings.check("deprecation warnings from the gem's files (Ruby #{RUBY_VERSION})", lines)
  end

  # The demos load lib/llm_failover/llm_failover.so: `rake compile` first.
  task :compile_extension do
    Rake::Task["compile"].invoke
  end
end

desc "No compiler warning building the extension, no deprecation warning from the gem's Ruby files"
task warnings: %w[warnings:compile warnings:deprecated]
