# frozen_string_literal: true

require_relative "tool_call"

module LlmFailover
  module Tools
    # Which stored status a call's new state may be written over, for every store
    # (MemoryStore and the ActiveRecord store take the same rule from here): one
    # process wins a call (two jobs completing one chat never both run it), an
    # approval never lands on a denied call, a denial never on one that runs, and
    # nothing is written over a result. A result is taken over any state without one:
    # the tool has run by then.
    module StoreTransition
      PRIOR = { running: %w[pending approved], approved: %w[pending], pending: %w[pending],
                succeeded: %w[pending approved running], failed: %w[pending approved running],
                rejected: %w[pending approved], denied: %w[pending] }.freeze

      module_function

      # The stored statuses +call+ may be written over. A call the store read as
      # running (the loop runs an idempotent! one again after a crash) is run again
      # from running; any other run starts from pending or approved, so that of two
      # processes that read it pending only one runs it.
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
