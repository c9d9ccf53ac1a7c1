# frozen_string_literal: true

# Loaded by LlmFailover::Railtie.
namespace :llm_failover do
  desc "Failure rates, failovers and tokens from the attempt log (SINCE=7d|24h|30m, TABLE=llm_failover_attempts)"
  task report: :environment do
    require "llm_failover/report/cli"
    since = LlmFailover::Report::CLI.duration(ENV.fetch("SINCE", "7d"))
    attempts = LlmFailover::ActiveRecord::Attempt
    if ENV["TABLE"]
      table = ENV["TABLE"]
      attempts = Class.new(attempts) { self.table_name = table }
    end
    abort("llm_failover:report: no table #{attempts.table_name} (run the llm_failover:install migration)") unless
      attempts.table_exists?
    print LlmFailover::Report.new(from: Time.now - since, attempts: attempts)
  end
end
