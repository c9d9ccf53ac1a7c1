# frozen_string_literal: true

require "uri"
require_relative "../report"
require_relative "cli"

module LlmFailover
  class Report
    # The report as a page of the app: a Rack app (named Engine as DESIGN.md fixes the
    # mount line; it needs no Rails engine), mounted on a route the app already
    # protects. It does no authentication of its own: whoever reaches it sees every
    # provider's failures, the features' names and the error messages, so mount it
    # inside the app's admin check.
    #
    #   # config/routes.rb
    #   authenticate :user, ->(user) { user.admin? } do       # Devise
    #     mount LlmFailover::Report::Engine => "/llm_failover"
    #   end
    #   # or any constraint:
    #   constraints ->(request) { AdminSession.new(request).valid? } do
    #     mount LlmFailover::Report::Engine => "/llm_failover"
    #   end
    #
    # GET /llm_failover             the HTML page (`bin/rails llm_failover:report FORMAT=html`)
    # GET /llm_failover/report.txt  the text report (`bin/rails llm_failover:report`)
    # ?since=7d|24h|30m             the period, as SINCE= (default 7d)
    #
    # The figures are the CLI's: the same Report over the same table. The page has no
    # script and is sent with a Content-Security-Policy that allows none.
    class Engine
      HEADERS = { "cache-control" => "no-store", "x-content-type-options" => "nosniff",
                  "content-security-policy" => "default-src 'none'; style-src 'unsafe-inline'; img-src data:" }.freeze
      DEFAULT_SINCE = "7d"

      # The class itself is mountable: it answers with the default Attempt model.
      # @return [Array] a Rack response
      def self.call(env)
        (@default ||= new).call(env)
      end

      # @param attempts [Class] the Attempt model (or a subclass on another table/database)
      # @param circuit_events [Class] the CircuitTransition model (or a subclass)
      def initialize(attempts: LlmFailover::ActiveRecord::Attempt,
                     circuit_events: LlmFailover::ActiveRecord::CircuitTransition)
        @attempts = attempts
        @circuit_events = circuit_events
      end

      # @return [Array] a Rack response
      def call(env)
        method = env["REQUEST_METHOD"]
        return answer(405, "text/plain", "GET only\n", { "allow" => "GET, HEAD" }) unless %w[GET HEAD].include?(method)

        format = format_of(env["PATH_INFO"].to_s)
        return answer(404, "text/plain", "no such page: the report is at / and /report.txt\n") unless format

        since = CLI.duration(query(env).fetch("since", DEFAULT_SINCE))
        report = Report.new(from: Time.now - since, attempts: @attempts, circuit_events: @circuit_events)
        body = format == :html ? report.to_html : report.to_s
        answer(200, format == :html ? "text/html; charset=utf-8" : "text/plain; charset=utf-8", body,
               head: method == "HEAD")
      rescue ArgumentError => e
        answer(400, "text/plain", "#{e.message.sub('--since', 'since')}\n")
      end

      def inspect
        "#<#{self.class.name} #{@attempts.table_name}>"
      end

      private

      def format_of(path)
        case path.chomp("/")
        when "" then :html
        when "/report.txt" then :text
        end
      end

      def query(env)
        URI.decode_www_form(env["QUERY_STRING"].to_s).to_h
      end

      def answer(status, type, body, extra = {}, head: false)
        headers = HEADERS.merge("content-type" => type, "content-length" => body.bytesize.to_s).merge(extra)
        [status, headers, head ? [] : [body]]
      end
    end
  end
end
