# frozen_string_literal: true

require_relative "../safe_inspect"

module LlmFailover
  # An answer's reasoning state: what only the host that made it can read back on the next
  # turn (the Responses API's encrypted reasoning items as JSON text, Gemini's signature of
  # its text; a tool call's own signature is ToolCall#signature), the protocol it is in and
  # the origin (the provider entry) that made it. Stored with the assistant message (as
  # its reasoning, reasoning_api and reasoning_origin), handed back to the engine with it,
  # and sent by the core to that protocol and origin only (lf_wire_reasoning_goes): the
  # transcript stays canonical. Opaque, and never shown: #inspect leaves it out.
  #
  # @api private: Call's and the stores'
  Reasoning = Struct.new(:state, :api, :origin, keyword_init: true) do
    include SafeInspect

    # @param result [Engine::Result] a successful call's
    # @return [Reasoning, nil] nil when the answer carries none (neither its own nor a
    #   call's signature)
    def self.of(result)
      return nil unless result.reasoning_api

      new(state: result.reasoning, api: result.reasoning_api.to_s.freeze, origin: result.reasoning_origin).freeze
    end

    # @param message [#reasoning_api] a stored assistant message
    # @return [Array, nil] [state, api, origin] as an Engine message ends with it, nil when
    #   the message has none (or its store keeps none)
    def self.engine_tail(message)
      return nil unless message.respond_to?(:reasoning_api)

      api = message.reasoning_api
      return nil if api.nil? || api.to_s.empty?

      [message.reasoning, api.to_sym, message.reasoning_origin.to_s]
    end

    def inspect
      "#<LlmFailover::Reasoning #{api} from #{origin}>"
    end
  end
end
