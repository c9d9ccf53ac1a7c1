# frozen_string_literal: true

require "set"
require_relative "../errors"
require_relative "../tools/runner"
require_relative "../tools/tool_call"
require_relative "chunk"
require_relative "reply"
require_relative "tool_loop/concurrency"

module LlmFailover
  class Chat
    # One ask with tools: a model turn, every tool call of that turn, the results
    # back to the model, the next turn, until an answer without tool calls. Each turn
    # is a whole call (Chat#answer_turn: circuit, retries, backup); once a turn has
    # failed over, the later turns of this ask go to the backup alone.
    #
    # The loop works from the stored transcript, read once at the start of every turn
    # (the results it stores in that turn joined to it as stored), never from what an
    # earlier turn remembered, so that #ask and #complete resume alike (after a crash,
    # a ToolLoopError, a cancel):
    # - the open calls are those of the last assistant message that have no result
    #   message after it (MemoryStore documents the store's part);
    # - a call with a result message never runs again;
    # - a call stored `running` was cut mid-execute: run again only if its tool is
    #   idempotent!, else ToolInterruptedError;
    # - a call of a requires_approval! tool that is not approved parks the loop: the
    #   Reply lists it in pending_tool_calls and nothing of that turn runs.
    # Each call is stored `running` before Tool#execute and its result before the next
    # turn is sent.
    #
    # @api private: built by Chat for an ask or complete on a chat with tools
    class ToolLoop
      include Concurrency

      # What one turn needs of the loop (Chat#answer_turn reads it).
      # conversation: the store's conversation as this turn sends it (read once per
      # turn, with the results this process stored since appended).
      # stay_on: the pool host the ask's first answer came from (nil: none yet), where
      # the later turns go first while it has headroom: its prompt cache holds the
      # conversation so far.
      Turn = Struct.new(:request_id, :scrubbing, :on_backup, :fields, :maker, :attempts_before, :conversation,
                        :stay_on) do
        # @param call [Call] the turn's call
        def prepare(call)
          call.tool_fields = fields
          call.tool_calls_from = maker
          call.attempt_offset = attempts_before # one number per attempt of the request
          call.stay_on = stay_on
        end
      end

      # @param store [Object] the chat's store (with the tool methods)
      # @param toolbox [Tools::Toolbox]
      # @param fields [Hash] the engine's tool fields (tools, tool_choice, parallel_tool_calls)
      # @param concurrency [Symbol, nil] :threads runs one turn's calls at once
      # @param max_rounds [Integer] model turns at most
      # @param block [#call, nil] the ask's block: gets tool_call? and tool_result? chunks
      # @param scrubbing [Scrubber::Session, nil] one for the whole ask: a placeholder
      #   means the same value in every turn
      # @param cancellation [Cancellation] Chat#cancel! and the chat's cancel check set
      #   it: read between turns
      # @param target [Target] the chat's primary (names a reply no turn answered)
      # @param on_run [#call, nil] given every run of a tool once it has its outcome
      #   (call, started_at:, duration_ms:, request_id:): the tool.llm_failover event
      def initialize(store:, toolbox:, fields:, concurrency:, max_rounds:, block:, scrubbing:, cancellation:,
                     target:, on_run: nil)
        @store = store
        @toolbox = toolbox
        @runner = Tools::Runner.new(toolbox)
        @fields = fields
        @concurrency = concurrency
        @max_rounds = max_rounds
        @block = block
        @scrubbing = scrubbing
        @cancellation = cancellation
        @target = target
        @on_run = on_run
        @request_id = Engine.uuid
        @replies = []
        @calls = []  # every call this ask made or ran, in order (reply.tool_calls)
        @live = {}   # id -> the ToolCall this process holds (with the tool's Ruby value)
        @ids = nil   # every call id of the transcript, so that a new one is unique
        @on_backup = false
      end

      # The calls of the last assistant message without a result yet, when only
      # results follow it (anything else after it is the transcript's error to name:
      # the core refuses it with ToolTranscriptError before it is sent). The one rule
      # for where a stored turn stands: the loop resumes from it, and a chat record's
      # answer_pending? reads it.
      # @param conversation [Array] a store's #conversation
      # @return [Array<ToolCall>] as stored
      def self.open_calls(conversation)
        at = conversation.rindex { |m| m.role.to_s == "assistant" }
        return [] unless at

        message = conversation[at]
        calls = message.respond_to?(:tool_calls) ? message.tool_calls : []
        return [] if calls.empty?

        after = conversation[(at + 1)..]
        return [] unless after.all? { |m| m.role.to_s == "tool" }

        answered = after.map(&:tool_call_id)
        calls.reject { |c| answered.include?(c.id) }
      end

      # @yieldparam turn [Turn]
      # @yieldreturn [Reply] the turn's
      # @return [Reply] the final answer, with every turn's attempts and tool calls
      # @raise [ToolLoopError] still asking for tools after max_rounds turns (every call
      #   has its result: raise the limit and #complete goes on)
      # @raise [ToolInterruptedError] a call left running, its tool not idempotent!
      def run
        rounds = 0
        loop do
          @conversation = @store.conversation
          parked = run_open_calls
          return finish(@replies.last, pending: parked) unless parked.empty?
          return finish(@replies.last, cancelled: true) if @cancellation.requested_now?

          reply = yield Turn.new(@request_id, @scrubbing, @on_backup, fields_for(rounds), method(:make_calls),
                                 @replies.sum { |r| r.attempts.size }, @conversation, @replies.first&.host)
          rounds += 1
          @replies << reply
          @on_backup ||= reply.failover?
          return finish(reply) if reply.cancelled? || reply.tool_calls.empty?

          reply.tool_calls.each { |c| @live[c.id] = c }
          next if rounds < @max_rounds

          @conversation = @store.conversation
          parked = run_open_calls # the transcript stays whole
          return finish(reply, pending: parked) unless parked.empty?

          raise ToolLoopError.new(rounds: rounds, tool_calls: @calls.dup)
        end
      end

      private

      # A forced choice (:required, a tool's name) is the ask's first turn's: kept on the
      # later turns, it would leave the model no way to answer and the loop would run to
      # max_tool_rounds.
      def fields_for(round)
        return @fields if round.zero? || [nil, :auto, :none].include?(@fields[:tool_choice])

        @later_fields ||= @fields.merge(tool_choice: :auto)
      end

      # The answer's calls as the transcript keeps them (Call#succeed stores them with
      # the answer): an id no other call of the transcript has (a provider that gave
      # none, or reused one, gets a fresh one; provider_id keeps what it gave), the
      # arguments restored from the placeholders the model saw.
      def make_calls(raw, target, _response_model)
        @ids ||= transcript_ids
        raw.map do |id, name, arguments, signature|
          canonical = id.empty? || @ids.include?(id) ? "call_#{Engine.uuid.delete('-')}" : id
          @ids << canonical
          arguments = @scrubbing.restore(arguments, json: true) if @scrubbing
          ToolCall.new(id: canonical, provider_id: id.empty? ? nil : id, name: name, arguments: arguments,
                       provider: target.name, model: target.model, # the model asked, as Reply#model
                       signature: signature)
        end
      end

      def transcript_ids
        @conversation.each_with_object(Set.new) do |m, ids|
          m.tool_calls.each { |c| ids << c.id } if m.respond_to?(:tool_calls)
        end
      end

      # The open calls of the stored transcript, as this process holds them.
      def open_calls
        ToolLoop.open_calls(@conversation).map { |c| @live[c.id] || c }
      end

      # Runs every open call and stores its result.
      # @return [Array<ToolCall>] calls parked for approval (then nothing ran)
      def run_open_calls
        calls = open_calls
        return [] if calls.empty?

        parked = park(calls)
        return parked unless parked.empty?

        calls = calls.map { |call| resumable(call) }
        calls.each { |c| @calls << c unless @calls.any? { |k| k.id == c.id } }
        ready = calls.filter_map do |call|
          if call.final? # its result was decided but not stored (a settled call)
            stored(@store.add_tool_result(call))
            next
          end
          tool = @runner.prepare(call)
          tool ? [call, tool] : result(call)
        end
        ready.each { |call, _| emit(:call, call) }
        if @concurrency == :threads && ready.size > 1
          Fiber.scheduler ? run_in_fibers(ready) : run_in_threads(ready)
        else
          ready.each { |call, tool| perform(call, tool) }
        end
        ready.each { |call, _| result(call) }
        []
      end

      def perform(call, tool)
        clock = nil
        @runner.perform(call, tool, started: lambda { |c|
          @store.save_tool_call(c)
          clock = [Time.now, Process.clock_gettime(Process::CLOCK_MONOTONIC)] # #execute's time, not the store's
        })
        return call unless @on_run && clock

        duration_ms = (Process.clock_gettime(Process::CLOCK_MONOTONIC) - clock[1]) * 1000.0
        @on_run.call(call, started_at: clock[0], duration_ms: duration_ms, request_id: @request_id)
        call
      end

      # A rejected call's result goes to the model at once; a run one's after all ran.
      def result(call)
        stored(@store.add_tool_result(call))
        emit(:result, call)
        nil
      end

      # A result message this process stored joins the turn's conversation as the
      # store appended it: the turn is sent without reading the store again, which the
      # store's other writers cannot change meanwhile (a call is run by the one process
      # whose conditional write took it; a decision waits for a parked loop, which
      # has returned). Each turn starts from a fresh read.
      def stored(message)
        @conversation = [*@conversation, message]
        message
      end

      # A call left running by a crash: run again only when its tool says that is safe.
      def resumable(call)
        return call unless call.status == :running

        tool = @toolbox[call.name]
        raise ToolInterruptedError.new(tool_call: call) unless tool&.idempotent?

        @live[call.id] = ToolCall.from_h(call.to_h.merge("status" => "pending"))
      end

      # Calls of requires_approval! tools not approved yet wait for a person.
      def park(calls)
        waiting = calls.select do |call|
          tool = @toolbox[call.name]
          call.status == :pending && tool&.requires_approval?
        end
        waiting.each do |call|
          next if call.awaiting_approval?

          call.await_approval!
          @store.save_tool_call(call)
        end
        waiting
      end

      def emit(event, call)
        return unless @block

        @block.call(Chunk.new(content: "", model: call.model, provider: call.provider, index: 0,
                              request_id: @request_id, tool_call: call, tool_event: event))
      end

      # The ask's Reply: the last turn's answer, every turn's attempts, tokens summed.
      def finish(last, pending: [], cancelled: false)
        attempts = @replies.flat_map(&:attempts)
        provider = last ? last.provider : @target.name
        model = last ? last.model : @target.model
        # Cancelled between turns: nothing of a next answer was said.
        content = cancelled || last.nil? ? "" : last.content
        Reply.new(content: content, model: model, response_model: last&.response_model,
                  provider: provider, input_tokens: sum(:input_tokens), output_tokens: sum(:output_tokens),
                  request_id: @request_id, attempts: attempts, failover: @on_backup,
                  finish_reason: cancelled ? "cancelled" : last&.finish_reason,
                  provider_request_id: last&.provider_request_id, streamed: !@block.nil?,
                  chunk_count: last&.chunk_count || 0, cancelled: cancelled || last&.cancelled?,
                  json: last&.json, tool_calls: @calls.dup, pending_tool_calls: pending, host: last&.host)
      end

      def sum(name)
        values = @replies.map(&name).compact
        values.empty? ? nil : values.sum
      end
    end
  end
end
