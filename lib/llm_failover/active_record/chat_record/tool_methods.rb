# frozen_string_literal: true

require_relative "../../../llm_failover" # LlmFailover.chat, Tools::Decisions

module LlmFailover
  module ActiveRecord
    module ChatRecord
      # ChatRecord's tool methods (included in it): the tools and tool choice given to
      # every Chat the record builds, and the decisions on its stored calls. Uses the
      # record's llm_apply, llm_store, llm_read and @llm_tool_settings.
      module ToolMethods
        # with_tool, with_tools, with_tool_choice: LlmFailover::Chat's own, given to every
        # Chat this record builds from now on, in the order they were called (with_tools
        # replace: true starts over, as on a Chat). Tools are code, not columns: a record
        # loaded again (a job's) offers none until it is told again. Each call is checked
        # at once by a Chat, as a plain chat checks it.
        # @return [self]
        %i[with_tool with_tools with_tool_choice].each do |name|
          define_method(name) do |*args, **kwargs|
            apply = [name, nil, args, kwargs]
            llm_apply(llm_tool_probe, [*llm_tool_settings, apply])
            # An app installed before tools: said now, not after the model asked for one.
            llm_store.check_tools! if persisted? && name != :with_tool_choice && !args.empty?
            @llm_tool_settings = [*llm_tool_settings, apply]
            self
          end
        end

        # @return [Array<LlmFailover::Tool>] the tools this record's chats offer
        def tools
          llm_apply(llm_tool_probe, llm_tool_settings).tools
        end

        # @return [Symbol, String] :auto unless with_tool_choice said otherwise
        def tool_choice
          llm_apply(llm_tool_probe, llm_tool_settings).tool_choice
        end

        # Chat#approve_tool_call, #deny_tool_call, #settle_tool_call on this record's
        # stored calls: from any process (a web request approves, the job's #complete
        # goes on).
        # @return [LlmFailover::ToolCall]
        def approve_tool_call(id)
          Tools::Decisions.approve(llm_store, id)
        end

        # @return [LlmFailover::ToolCall]
        def deny_tool_call(id, reason:)
          Tools::Decisions.deny(llm_store, id, reason: reason)
        end

        # @return [LlmFailover::ToolCall]
        def settle_tool_call(id, result: nil, error: nil)
          Tools::Decisions.settle(llm_store, id, result: result, error: error)
        end

        # The calls the turn the chat ends on is parked on (requires_approval! tools
        # awaiting a person's approve_tool_call or deny_tool_call): what a page shows
        # buttons for. Empty when the turn is not parked.
        # @return [Array<LlmFailover::ToolCall>]
        def tool_calls_awaiting_approval
          LlmFailover::Chat::ToolLoop.open_calls(llm_store.conversation).select(&:awaiting_approval?)
        end

        private

        def llm_tool_settings
          @llm_tool_settings ||= []
        end

        # A Chat that checks tool settings as the record's chats will take them.
        def llm_tool_probe
          LlmFailover.chat(model: llm_read(:model), provider: llm_read(:provider).presence)
        end
      end
    end
  end
end
