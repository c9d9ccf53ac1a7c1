# frozen_string_literal: true

require "json"
require_relative "../records/tool_run"
require_relative "../tools/decisions"
require_relative "../tools/toolbox"
require_relative "answer_format"
require_relative "chat_options"
require_relative "tool_loop"

module LlmFailover
  class Chat
    # Chat's tool methods (included in Chat): what the chat offers the model and how
    # an ask with tools is run (ToolLoop).
    module ChatTools
      TOOL_CHOICES = %i[auto required none].freeze
      CONCURRENCY = [nil, :threads].freeze

      # @param tool [Class<Tool>, Tool]
      # @return [self]
      def with_tool(tool)
        with_tools(tool)
      end

      # Offers tools to the model. Each is checked now (a name the providers take, an
      # #execute of its own); two tools may not share a name.
      # @param tools [Array<Class<Tool>, Tool>]
      # @param replace [Boolean] drop the tools offered so far first (with no tools:
      #   the chat has none again)
      # @param concurrency [Symbol, nil] :threads runs the calls of one turn at once
      #   (a model's parallel calls); nil keeps the current setting (one after another)
      # @return [self]
      # @raise [ArgumentError] a tool Tool.resolve refuses, a store without the tool methods
      def with_tools(*tools, replace: false, concurrency: KEEP_CONCURRENCY)
        unless concurrency.equal?(KEEP_CONCURRENCY) || CONCURRENCY.include?(concurrency)
          raise ArgumentError, "concurrency must be :threads or nil, got #{concurrency.inspect}"
        end

        check_tool_store unless tools.empty?
        box = Tools::Toolbox.new
        box.add(*@toolbox) if @toolbox && !replace
        box.add(*tools)
        @toolbox = box
        @tool_concurrency = concurrency unless concurrency.equal?(KEEP_CONCURRENCY)
        self
      end

      # Which calls the model may make: :auto (the default: it decides), :required (at
      # least one), :none, or a tool's name (a call of that tool).
      # @return [self]
      def with_tool_choice(choice)
        @tool_choice =
          case choice
          when *TOOL_CHOICES then choice
          when String, Symbol then Tool.check_name(choice.to_s, "with_tool_choice")
          else raise ArgumentError, "tool choice is :auto, :required, :none or a tool's name, got #{choice.inspect}"
          end
        self
      end

      # @return [Array<Tool>] the tools offered, in the order they were added
      def tools
        @toolbox ? @toolbox.to_a : []
      end

      # @return [Symbol, String] :auto unless with_tool_choice said otherwise
      def tool_choice
        @tool_choice || :auto
      end

      # @return [Integer] model turns one ask may make (c.max_tool_rounds)
      def max_tool_rounds
        @config.max_tool_rounds
      end

      # Approves a parked call of a requires_approval! tool (reply.pending_tool_calls):
      # the next #complete runs it. With the ActiveRecord store any process may approve.
      # @param id [String] ToolCall#id
      # @return [ToolCall]
      # @raise [ArgumentError] no such call, or it is not awaiting approval
      def approve_tool_call(id)
        Tools::Decisions.approve(@store, id)
      end

      # Denies a parked call: it never runs, and the next #complete sends the model
      # "The user denied this call: <reason>" as its result.
      # @return [ToolCall]
      def deny_tool_call(id, reason:)
        Tools::Decisions.deny(@store, id, reason: reason)
      end

      # Gives a call a crash left running (ToolInterruptedError) the outcome the app
      # knows it had, result: or error:; the next #complete sends it to the model.
      # @return [ToolCall]
      def settle_tool_call(id, result: nil, error: nil)
        Tools::Decisions.settle(@store, id, result: result, error: error)
      end

      private

      KEEP_CONCURRENCY = Object.new.freeze
      private_constant :KEEP_CONCURRENCY

      def tools?
        !@toolbox.nil? && !@toolbox.empty?
      end

      # A schema beside tools, refused here when any target of the chat (the backup
      # too) cannot take the pair (the wire layer's rule and words,
      # AnswerFormat.schema_with_tools_refusal), before the prompt is stored or a quota
      # unit taken, so that failing over never meets it mid-ask.
      # @raise [ArgumentError]
      def check_schema_with_tools(format)
        return unless format&.schema_json && tools?

        refusing = engine_targets.flat_map(&:hosts).filter_map do |t|
          why = AnswerFormat.schema_with_tools_refusal(t.protocol)
          [t.label, why] if why
        end
        return if refusing.empty?

        raise ArgumentError,
              "with_schema #{format.schema_name.inspect} and tools (#{@toolbox.names.join(', ')}), asked of " \
              "#{refusing.map(&:first).join(', ')}: #{refusing.first.last}. Drop one of them, or ask with json: false"
      end

      def check_tool_store
        missing = Options::TOOL_STORE_METHODS.reject { |m| store.respond_to?(m) }
        return if missing.empty?

        raise ArgumentError, "the store #{store.class} cannot keep tool calls (it lacks #{missing.join(', ')}): " \
                             "see LlmFailover::MemoryStore"
      end

      # Runs an ask (or complete) with tools: every turn through #answer_turn. Chat#cancel!
      # reaches the loop between turns through its own Cancellation.
      def answer_with_tools(temperature, max_tokens, block, cache, format)
        between = new_cancellation
        tool_loop = ToolLoop.new(store: store, toolbox: @toolbox, fields: tool_fields, concurrency: @tool_concurrency,
                                 max_rounds: @config.max_tool_rounds, block: block, scrubbing: scrub_session,
                                 cancellation: between, target: @primary_target, on_run: method(:tool_ran))
        @running_lock.synchronize { @running << between }
        begin
          # An ask with tools neither reads nor writes the response cache: its answer
          # depends on what the tools returned.
          between.watching { tool_loop.run { |turn| answer_turn(temperature, max_tokens, block, false, format, turn) } }
        ensure
          @running_lock.synchronize { @running.delete(between) }
        end
      end

      # A tool ran: the "tool.llm_failover" event and a usage-log line (ToolRun), with
      # its arguments and result only under c.log_tool_content. A sink that raises never
      # breaks the loop (UsageLog reports it once).
      def tool_ran(call, started_at:, duration_ms:, request_id:)
        run = ToolRun.of(call, duration_ms: duration_ms, started_at: started_at, request_id: request_id,
                               feature: @options.feature, content: @config.log_tool_content)
        @config.usage_log_emitter.emit_tool(run)
      end

      # The engine's tool fields of every turn.
      def tool_fields
        choice = tool_choice
        if choice.is_a?(String) && @toolbox[choice].nil?
          raise ArgumentError,
                "tool choice #{choice.inspect} is not one of the chat's tools (#{@toolbox.names.join(', ')})"
        end

        tools = @toolbox.definitions.map do |d|
          [d["name"], d["description"].empty? ? nil : d["description"], JSON.generate(d["schema"])]
        end
        { tools: tools,
          tool_choice: choice,
          parallel_tool_calls: @tool_concurrency == :threads ? true : nil }
      end
    end
  end
end
