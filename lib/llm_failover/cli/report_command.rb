# frozen_string_literal: true

require_relative "command"

module LlmFailover
  class CLI
    # `llm_failover report`: Report::CLI over the ActiveRecord attempt log, loaded only
    # here (ActiveRecord is optional).
    class ReportCommand < Command
      NAME = "report"

      def run(argv)
        begin
          require_relative "../report/cli"
        rescue LoadError => e
          error_line("report needs the ActiveRecord integration (#{e.message})")
          return USAGE
        end
        code = LlmFailover::Report::CLI.run(argv, out: @out, err: @err)
        code.is_a?(Integer) ? code : OK
      end
    end
  end
end
