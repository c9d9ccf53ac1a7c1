# frozen_string_literal: true

require_relative "reasoning"

module LlmFailover
  class Chat
    # The stored conversation as the engine takes it: one canonical form, which the
    # core renders per protocol when a turn is sent (a call id made by one provider
    # mapped for the other, tool results as "tool" messages or tool_result blocks).
    # Only what both protocols can take is stored, so nothing one provider alone
    # understands (Anthropic thinking blocks, reasoning content) ever reaches the other;
    # the one exception, an answer's reasoning state (Reasoning, ToolCall#signature), is
    # handed over with the protocol and origin that made it, and the core sends it there
    # only.
    #
    # @api private: Chat's, for every call
    module Transcript
      module_function

      # @param conversation [Array<#role, #content>] the store's #conversation
      # @param tools [Boolean] whether the chat offers tools now; without, the stored
      #   calls and results go as text (see #as_text)
      # @return [Array<Array>] [role, content]; an assistant's with tool calls
      #   ["assistant", content, [[id, name, arguments JSON], ...]] (a signed call
      #   [id, name, arguments JSON, signature]), with reasoning state ["assistant",
      #   content, calls, reasoning, reasoning_api, reasoning_origin]; a tool result
      #   ["tool", content, call_id, is_error]
      def engine_messages(conversation, tools: true)
        return as_text(conversation) unless tools

        conversation.map do |m|
          role = m.role.to_s
          next ["tool", m.content.to_s, m.tool_call_id.to_s, m.is_error ? true : false] if role == "tool"
          next [role, m.content.to_s] unless role == "assistant"

          assistant(m)
        end
      end

      # An assistant message: its calls (each with its signature), and its reasoning
      # state with the protocol and origin that made it, whenever it has some.
      def assistant(message)
        calls = message.respond_to?(:tool_calls) ? message.tool_calls : []
        reasoning = Reasoning.engine_tail(message)
        return ["assistant", message.content.to_s] if calls.empty? && reasoning.nil?

        calls = calls.map { |c| c.signature ? [c.id, c.name, c.arguments_json, c.signature] : [c.id, c.name, c.arguments_json] }
        reasoning ? ["assistant", message.content.to_s, calls, *reasoning] : ["assistant", message.content.to_s, calls]
      end

      # The conversation of a chat that offers no tools now (with_tools(replace: true)
      # with none, a chat reloaded without them) while it holds earlier tool calls:
      # Anthropic refuses tool_use and tool_result blocks without a tools list, so each
      # call and its result go as lines of the assistant message that made the call,
      # and the result messages are left out. Both protocols get the same, so a
      # failover sees the same history; reasoning state, made for the calls, stays out.
      # @return [Array<Array>] [role, content] only
      def as_text(conversation)
        results = nil # the tool results by call id, once a message with calls needs them
        conversation.filter_map do |m|
          role = m.role.to_s
          next if role == "tool"

          calls = role == "assistant" && m.respond_to?(:tool_calls) ? m.tool_calls : []
          next [role, m.content.to_s] if calls.empty?

          results ||= conversation.select { |r| r.role.to_s == "tool" }.to_h { |r| [r.tool_call_id.to_s, r] }
          lines = calls.map { |c| call_line(c, results[c.id.to_s]) }
          ["assistant", [m.content.to_s, *lines].reject(&:empty?).join("\n")]
        end
      end

      def call_line(call, result)
        outcome =
          if result.nil? then "no result"
          elsif result.is_error then "failed: #{result.content}"
          else "returned: #{result.content}"
          end
        "[earlier tool call #{call.name}(#{call.arguments_json}) #{outcome}]"
      end

      # What leaves the process, scrubbed: every content (tool results included) and
      # every call's arguments.
      # @param session [Scrubber::Session]
      # @return [Array<Array>] the same messages
      def scrub!(messages, session)
        messages.each do |m|
          m[1] = session.scrub(m[1])
          next unless m[0] == "assistant" && m.size > 2

          m[2] = m[2].map { |id, name, args, *signature| [id, name, session.scrub(args), *signature] }
        end
      end
    end
  end
end
