# frozen_string_literal: true

require "json"
require "set"
require_relative "../errors"
require_relative "warnings"

module LlmFailover
  # Hands every AttemptRecord to the configured sinks, as the attempts happen.
  #
  # A sink is a callable (#call(record)), an object responding to #record(record), or a
  # Logger (one JSON line per attempt at info level). When ActiveSupport::Notifications
  # is loaded, every record is also instrumented as "attempt.llm_failover" with the
  # record's Hash as payload (started_at a Time there, as Rails' own payloads carry times). A sink that raises never breaks the user's call: it is
  # reported once per sink class and the other sinks still get the record.
  #
  # Tool runs (#emit_tool, a ToolRun each) go to the Logger sinks as one JSON line
  # ("event":"tool"), to sinks that respond to #tool_run, and to ActiveSupport::Notifications
  # as "tool.llm_failover". A callable or #record sink takes attempts only: it never
  # sees a ToolRun (AttemptLog writes one row per attempt).
  class UsageLog
    NOTIFICATION = "attempt.llm_failover"
    TOOL_NOTIFICATION = "tool.llm_failover"

    @warned = Set.new
    @warned_lock = Mutex.new

    class << self
      # @api private: true the first time +klass+ fails, false afterwards
      def first_failure?(klass)
        @warned_lock.synchronize { @warned.add?(klass) ? true : false }
      end

      # @api private: forget which sink classes already warned (specs, reconfiguration)
      def reset_warnings!
        @warned_lock.synchronize { @warned.clear }
      end
    end

    attr_reader :sinks, :source, :logger

    # @param sinks [nil, Object, Array<Object>]
    # @raise [ConfigurationError] when a sink is none of the accepted kinds
    def initialize(sinks, logger: nil)
      @source = sinks
      @sinks = Array(sinks).compact.freeze
      # Each sink's kind is settled once: emit runs for every attempt.
      @kinds = @sinks.map { |sink| kind_of_sink(sink) }.freeze
      @logger = logger
    end

    # Delivers +record+ to every sink and to ActiveSupport::Notifications.
    # @param record [AttemptRecord]
    def emit(record)
      @sinks.each_with_index { |sink, i| deliver(sink, @kinds[i], record) }
      instrument(record) if defined?(::ActiveSupport::Notifications)
      nil
    end

    # Delivers one tool run to the sinks that take them and to ActiveSupport::Notifications.
    # @param run [ToolRun]
    def emit_tool(run)
      @sinks.each_with_index do |sink, i|
        if @kinds[i] == :logger
          sink.info(JSON.generate(run.to_h))
        elsif sink.respond_to?(:tool_run)
          sink.tool_run(run)
        end
      rescue StandardError => e
        report(sink.class, e)
      end
      instrument_tool(run) if defined?(::ActiveSupport::Notifications)
      nil
    end

    private

    def instrument_tool(run)
      payload = run.to_h
      payload[:started_at] = run.started_at
      ::ActiveSupport::Notifications.instrument(TOOL_NOTIFICATION, payload)
    rescue StandardError => e
      report(::ActiveSupport::Notifications, e)
    end

    def kind_of_sink(sink)
      if sink.respond_to?(:call) then :call
      elsif sink.respond_to?(:record) then :record
      elsif logger?(sink) then :logger
      else
        raise ConfigurationError,
              "usage_log sink #{sink.class} must respond to #call or #record, or be a Logger"
      end
    end

    def logger?(sink)
      (defined?(::Logger) && sink.is_a?(::Logger)) || sink.respond_to?(:info)
    end

    def deliver(sink, kind, record)
      case kind
      when :call then sink.call(record)
      when :record then sink.record(record)
      when :logger then sink.info(JSON.generate(record.to_h))
      end
    rescue StandardError => e
      report(sink.class, e)
    end

    def instrument(record)
      return unless defined?(::ActiveSupport::Notifications)

      payload = record.to_h
      payload[:started_at] = record.started_at if record.respond_to?(:started_at)
      ::ActiveSupport::Notifications.instrument(NOTIFICATION, payload)
    rescue StandardError => e
      report(::ActiveSupport::Notifications, e)
    end

    def report(klass, error)
      return unless self.class.first_failure?(klass)

      Warnings.warn("usage_log sink #{klass} raised #{error.class}: #{error.message} " \
                    "(reported once per sink class; the call goes on)", logger: @logger)
    end
  end
end
