# frozen_string_literal: true

require_relative "tool_call"

module LlmFailover
  module Tools
    # Which stored status a call's new state may be written over, the one rule of
    # every store: one process wins a call, an approval never lands on a denial nor a
    # denial on a run, and nothing is written over a result.
    module StoreTransition
      PRIOR = { running: %w[pending approved], approved: %w[pending], pending: %w[pending],
                succeeded: %w[pending approved running], failed: %w[pending approved running],
                rejected: %w[pending approved], denied: %w[pending] }.freeze

      module_function

      # The stored statuses +call+ may be written over. A run starts from pending or
      # approved (of two readers only one wins), or from running for a call this store
      # read as running (an idempotent! rerun after a crash).
      # @param seen [String, nil] the status the store last read or wrote for the call
      # @return [Array<String>]
      def prior(call, seen:)
        return %w[running] if call.status == :running && seen == "running"

        PRIOR.fetch(call.status)
      end

      # save_tool_call takes a state without a result only.
      # @raise [ArgumentError]
      def check_not_final!(call)
        return unless call.final?

        raise ArgumentError, "tool call #{call.id} is final (#{call.status}): store it with add_tool_result"
      end

      # @param stored [String, nil] the call's stored status (nil: not stored)
      # @raise [ArgumentError] the call is not stored, or in a status +allowed+ lacks
      #   (another process moved it first)
      def refuse!(call, stored, allowed)
        raise ArgumentError, "tool call #{call.id} is not stored in this chat" if stored.nil?

        raise ArgumentError, "tool call #{call.id} (#{call.name}) is #{stored} in the store, not " \
                             "#{allowed.join(' or ')}: it cannot become #{call.status} " \
                             "(another process moved it first)"
      end
    end
  end
end
