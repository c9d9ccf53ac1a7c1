# frozen_string_literal: true

require_relative "../../cache/response_cache"
require_relative "../chunk"

module LlmFailover
  class Call
    # The answer as the store and the user's block see it. Every delta is stored
    # before the block gets it as a Chunk, so the store always holds what the user
    # saw; the stored assistant message is started by the first thing that needs it
    # (a call the quota refuses stores none) and settled once: finished, failed or
    # cancelled. With a scrubbed request, placeholders split across deltas are
    # restored before they are stored or shown.
    #
    # @api private: one per Call
    class Delivery
      # @return [Integer] the chunks the block got for the current answer
      attr_reader :chunk_count

      def initialize(store:, block:, request_id:)
        @store = store
        @block = block
        @request_id = request_id
        @chunk_count = 0
        @message = nil
        @restorer = nil
        @settled = false
      end

      # Whether the answer goes to a block.
      def streamed?
        !@block.nil?
      end

      # @param session [Scrubber::Session, nil] the call's placeholders
      # @param json [Boolean] a JSON answer: values go back escaped for JSON
      def restore_with(session, json:)
        @restorer = session&.restoring? && @block ? session.stream(json: json) : nil
      end

      # A streamed delta from +target+ (a Target).
      def delta(text, target)
        return deliver(text, target) unless @restorer

        @restorer_target = target
        @restorer.feed([text]).each { |restored| deliver(restored, target) }
      end

      # Another target answers from scratch: the stored partial is emptied and the
      # block gets a reset Chunk before the new target's first delta.
      def reset(target)
        flush
        @chunk_count = 0
        @store.reset_assistant(message(target), model: target.model, provider: target.name.name)
        @block&.call(Chunk.new(content: "", model: target.model, provider: target.name, index: 0,
                               request_id: @request_id, reset: true))
      end

      # A whole answer at once (the response cache's): to a block in word-sized
      # chunks, as a streamed one would come; without one, to the store in one piece.
      # +model+ is the model asked (the chunks'), +stored_model+ the one the store records.
      def whole(content, model:, stored_model:, provider:)
        @message = @store.start_assistant(model: stored_model, provider: provider.name)
        return @store.append_assistant(@message, content) unless @block

        ResponseCache.chunks(content).each do |text|
          @store.append_assistant(@message, text)
          index = @chunk_count
          @chunk_count += 1
          @block.call(Chunk.new(content: text, model: model, provider: provider, index: index,
                                request_id: @request_id))
        end
      end

      # The answer is complete (#flush first, when a restorer may hold its end).
      # +tool_calls+: the calls the answer asked for, stored with it (given to the store
      # only when there are some: a store without tools never sees the keyword);
      # +reasoning+: its Reasoning, the same way.
      def finish(target, content:, model:, provider:, input_tokens:, output_tokens:, tool_calls: nil, reasoning: nil)
        @settled = true
        extra = tool_calls.nil? || tool_calls.empty? ? {} : { tool_calls: tool_calls }
        extra[:reasoning] = reasoning if reasoning
        @store.finish_assistant(message(target), content: content, model: model, provider: provider.name,
                                                 input_tokens: input_tokens, output_tokens: output_tokens, **extra)
      end

      # Chat#cancel! stopped the answer: the partial text stays, marked cancelled
      # (a store without #cancel_assistant marks it failed). #flush first.
      def cancel(target, content:)
        @settled = true
        message = message(target) # stopped before the first delta: an empty one
        if @store.respond_to?(:cancel_assistant)
          @store.cancel_assistant(message, content: content, model: target.model, provider: target.name.name)
        else
          @store.fail_assistant(message, model: target.model, provider: target.name.name)
        end
      end

      # The answer failed, or the call was torn down (+named+ false: the block raised,
      # the thread was killed, a Timeout fired). Either way the stored message is
      # failed, never left to be sent again as if it were complete.
      def mark_failed(target, named: true)
        return if @settled

        @settled = true
        return @store.fail_assistant(message(target)) unless named

        @store.fail_assistant(message(target), model: target.model, provider: target.name.name)
      end

      # The end of an answer held back for a split placeholder goes out.
      def flush
        held = @restorer&.flush
        deliver(held, @restorer_target) unless held.nil? || held.empty?
      end

      private

      def deliver(text, target)
        @store.append_assistant(@message || message(target), text)
        index = @chunk_count
        @chunk_count = index + 1
        @block&.call(Chunk.new(content: text, model: target.model, provider: target.name, index: index,
                               request_id: @request_id))
      end

      def message(target)
        @message ||= @store.start_assistant(model: target.model, provider: target.name.name)
      end
    end
  end
end
