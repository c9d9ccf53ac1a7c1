# frozen_string_literal: true

require_relative "../target"

module LlmFailover
  class MemoryStore
    # A stored message. Only the store mutates it.
    class Message
      attr_reader :role, :content, :model, :provider, :status, :input_tokens, :output_tokens
      # @return [String, nil] the user message's idempotency_key (Chat#ask)
      attr_reader :idempotency_key
      # @return [String, nil] the turn this user message opens, once a call answered it
      #   (MemoryStore#turn_id)
      attr_reader :turn_id
      # @api private: when a call claimed this user message's turn (monotonic seconds)
      attr_reader :claimed_at
      # @api private: the claim's owner (Idempotency::Owner.claim_name) while answering
      attr_reader :claimed_by
      # @return [Array<Attachment>] the files sent with a user message (Chat#ask's with:)
      attr_reader :attachments
      # @return [String, nil] role "tool": the ToolCall#id this message is the result of
      attr_reader :tool_call_id
      # @return [String, nil] an answer's reasoning state (Reasoning#state), opaque
      attr_reader :reasoning
      # @return [String, nil] the protocol of its reasoning state (or of its calls' signatures)
      attr_reader :reasoning_api
      # @return [String, nil] the provider entry that made it
      attr_reader :reasoning_origin

      # The empty list every message without attachments or tool calls shares (frozen).
      NONE = [].freeze

      def initialize(role:, content:, status: "complete", model: nil, provider: nil, attachments: NONE)
        @role = role
        @attachments = attachments
        @content = content
        @status = status
        @model = model
        @provider = provider
        @input_tokens = nil
        @output_tokens = nil
        @idempotency_key = nil
        @turn_id = nil
        @tool_call_id = nil
        @is_error = false
        @tool_call_ids = nil
        @reasoning = @reasoning_api = @reasoning_origin = nil
      end

      # @return [Array<ToolCall>] an assistant message's tool calls, as stored now
      def tool_calls
        return NONE unless @tool_call_ids

        @tool_call_ids.map { |id| @calls_from.tool_call(id) }
      end

      # @return [Boolean] role "tool": the call failed (the model is told so)
      def is_error # rubocop:disable Naming/PredicateName -- the wire's name, as the AR column
        @is_error
      end

      def complete?
        status == "complete"
      end

      # @api private: store use only
      def update(**attrs)
        attrs.each { |name, value| instance_variable_set(:"@#{name}", value) }
        self
      end

      # @api private: store use only; the answer is complete
      def finish(content:, model:, provider:, input_tokens:, output_tokens:)
        @content = content
        @model = model
        @provider = provider
        @status = "complete"
        @input_tokens = input_tokens
        @output_tokens = output_tokens
        self
      end

      def to_h
        h = { role: role, content: content, model: model, provider: provider, status: status,
              input_tokens: input_tokens, output_tokens: output_tokens }
        h[:tool_calls] = tool_calls.map(&:to_h) if @tool_call_ids
        h.merge!(tool_call_id: @tool_call_id, is_error: @is_error) if @tool_call_id
        h
      end

      def inspect
        "#<#{self.class.name} #{role} #{status} #{content.to_s[0, 40].inspect}" \
          "#{" #{Target.label(provider, model)}" if model}>"
      end
    end
  end
end
