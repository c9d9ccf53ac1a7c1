# frozen_string_literal: true

# Loaded by LlmFailover::Railtie.
namespace :llm_failover do
  desc "Failure rates, failovers and tokens from the attempt log (SINCE=7d|24h|30m, TABLE=llm_failover_attempts, " \
       "FORMAT=html with OUTPUT=tmp/llm_failover_report.html for a page with charts)"
  task report: :environment do
    require_relative "../report/cli"
    since = LlmFailover::Report::CLI.duration(ENV.fetch("SINCE", "7d"))
    format = ENV.fetch("FORMAT", "text")
    abort("llm_failover:report: FORMAT is text or html, not #{format.inspect}") unless %w[text html].include?(format)
    attempts = LlmFailover::ActiveRecord::Attempt
    if ENV["TABLE"]
      table = ENV["TABLE"]
      attempts = Class.new(attempts) { self.table_name = table }
    end
    abort("llm_failover:report: no table #{attempts.table_name} (run the llm_failover:install migration)") unless
      attempts.table_exists?
    report = LlmFailover::Report.new(from: Time.now - since, attempts: attempts)
    if format == "html"
      path = ENV["OUTPUT"] || Rails.root.join("tmp", "llm_failover_report.html").to_s
      File.write(path, report.to_html)
      puts "llm_failover:report: wrote #{path}"
    else
      print report
    end
  end
end
