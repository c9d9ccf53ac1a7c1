# frozen_string_literal: true

require "json"
require "time"

module LlmFailover
  # One run of a tool, as the app observes it: an ActiveSupport::Notifications event
  # "tool.llm_failover" (this Hash as payload) and one usage-log line (UsageLog#emit_tool).
  # Only a call that ran has one: a rejected call (bad arguments, unknown tool) or a
  # denied one never ran a tool.
  #
  # arguments and result are nil unless the configuration's log_tool_content is true:
  # they hold what users and the app's systems said, which a log is seldom the place for.
  class ToolRun
    FIELDS = %i[request_id feature tool call_id provider model status error_class error_message duration_ms
                started_at arguments result].freeze

    attr_reader(*FIELDS)

    # @param call [ToolCall] final (succeeded or failed)
    # @param duration_ms [Float] #execute's wall time
    # @param started_at [Time]
    # @param content [Boolean] keep the arguments and the result
    def self.of(call, duration_ms:, started_at:, request_id: nil, feature: nil, content: false)
      error = call.error
      new(request_id: request_id, feature: feature, tool: call.name, call_id: call.id, provider: call.provider,
          model: call.model, status: call.status, error_class: error&.class_name,
          # A raised error's message is the tool's own text, as content is.
          error_message: content ? error&.message : nil, duration_ms: duration_ms, started_at: started_at,
          arguments: content ? call.arguments_json : nil, result: content ? call.content : nil)
    end

    def initialize(**fields)
      unknown = fields.keys - FIELDS
      raise ArgumentError, "unknown ToolRun field(s): #{unknown.join(', ')}" unless unknown.empty?

      FIELDS.each { |name| instance_variable_set(:"@#{name}", fields[name]) }
      freeze
    end

    # @return [Boolean] whether #execute raised
    def error?
      !@error_class.nil?
    end

    # @return [Hash{Symbol => Object}] "event" first, times as ISO 8601: one usage-log line
    def to_h
      fields = FIELDS.to_h do |name|
        value = public_send(name)
        value = value.to_s if (name == :provider || name == :status) && value
        value = value.utc.iso8601(3) if value.is_a?(Time)
        [name, value]
      end
      { event: "tool" }.merge(fields)
    end

    def inspect
      "#<#{self.class.name} #{@tool} #{@call_id} #{@status} #{@duration_ms&.round(1)} ms>"
    end
  end
end
