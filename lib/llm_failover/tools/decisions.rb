# frozen_string_literal: true

require_relative "tool_call"

module LlmFailover
  module Tools
    # What an app decides about a stored tool call while the loop is parked: approve
    # or deny a requires_approval! call, or settle one a crash left running. One store
    # write each, so any process can decide; the next #complete acts on it. Chat and
    # chat records expose them as approve_tool_call, deny_tool_call, settle_tool_call.
    module Decisions
      module_function

      # @param store [#tool_call, #save_tool_call]
      # @param id [String] ToolCall#id
      # @return [ToolCall] approved
      # @raise [ArgumentError] no such call, or not awaiting approval
      def approve(store, id)
        call = awaiting(store, id, "approve")
        store.save_tool_call(call.approve!)
        call
      end

      # @param reason [String] what the model is told, after "The user denied this call: "
      # @return [ToolCall] denied, its result stored
      # @raise [ArgumentError] no such call, or not awaiting approval
      def deny(store, id, reason:)
        raise ArgumentError, "deny_tool_call needs a reason: (a String the model is told)" unless reason.is_a?(String)

        call = awaiting(store, id, "deny")
        store.add_tool_result(call.deny!(reason))
        call
      end

      # Gives a call left running (ToolInterruptedError) the outcome the app knows it had.
      # @param result [Object] what the tool did (a String, or anything JSON)
      # @param error [String, nil] or: why it failed, sent to the model as an error
      # @return [ToolCall] final, its result stored
      # @raise [ArgumentError] no such call, not running, or both/neither of result: and error:
      def settle(store, id, result: nil, error: nil)
        if result.nil? == error.nil?
          raise ArgumentError, "settle_tool_call takes result: or error: (one of them)"
        end

        call = find(store, id)
        unless call.status == :running
          raise ArgumentError, "tool call #{id} (#{call.name}) is #{call.status}: only a call left running is settled"
        end

        store.add_tool_result(call.settle!(result: result, error: error))
        call
      end

      def find(store, id)
        unless store.respond_to?(:tool_call)
          raise ArgumentError, "#{store.class} keeps no tool calls (a store with tools has #tool_call)"
        end

        store.tool_call(id.to_s) || raise(ArgumentError, "no tool call #{id.inspect} in this chat")
      end

      def awaiting(store, id, verb)
        call = find(store, id)
        return call if call.awaiting_approval?

        raise ArgumentError, "tool call #{id} (#{call.name}) is #{call.status}, not awaiting approval: " \
                             "nothing to #{verb}"
      end
    end
  end
end
