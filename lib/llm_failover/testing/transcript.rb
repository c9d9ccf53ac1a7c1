# frozen_string_literal: true

require "json"
require "securerandom"
require_relative "canned_errors"
require_relative "sealed_state"

module LlmFailover
  module Testing
    class FakeProvider
      # The tool calls and tool results of a request's messages, in any of its protocols,
      # and the check a strict provider makes of them before it answers: ids it takes, every
      # tool call followed by exactly one result, every result following its call. Anthropic
      # and Bedrock always check; OpenAI-compatible APIs mostly do; Gemini counts a turn's
      # results against its calls and, for its 3 models, wants the first call of each step
      # of the current turn signed (a signature this server made for another lane is
      # corrupted). With strict_transcript: true the FakeProvider answers a broken
      # transcript with the
      # provider's own 400.
      class Transcript
        # Anthropic's rule for a tool_use id (and so for the tool_use_id of its result).
        ANTHROPIC_ID = /\A[a-zA-Z0-9_-]+\z/.freeze
        # OpenAI's longest tool call id: a longer one made by another provider is refused.
        OPENAI_ID_MAX = 40
        # Bedrock's rule for a toolUseId.
        BEDROCK_ID = /\A[a-zA-Z0-9_-]{1,64}\z/.freeze

        # A call in an assistant message: message index, block index, id, name.
        Call = Struct.new(:message, :position, :id, :name)
        # A result: message index, block index, the call id it answers, its content as
        # text, and whether it says the call failed (Anthropic is_error).
        Result = Struct.new(:message, :position, :id, :content, :error)
        # Where each protocol keeps the transcript in its body.
        MESSAGES = { responses: "input", gemini: "contents" }.freeze

        # @param api [Symbol] :openai, :anthropic, :responses, :bedrock or :gemini
        # @param json [Hash, nil] the request body
        # @param request [Request, nil] the request (its lane, which reasoning state must
        #   name; Gemini's model)
        def initialize(api, json, request: nil)
          @api = api
          @request = request
          @tool_config = json.is_a?(Hash) && json["toolConfig"].is_a?(Hash)
          @thinking = json.is_a?(Hash) && json["thinking"].is_a?(Hash) && json["thinking"]["type"] == "enabled"
          # The Responses API's input items and Gemini's contents take the messages' place.
          messages = json.is_a?(Hash) ? json[MESSAGES.fetch(api, "messages")] : nil
          @messages = messages.is_a?(Array) ? messages.map { |m| m.is_a?(Hash) ? m : {} } : []
        end

        # @return [Array<Call>] every tool call in the transcript, in order
        def calls
          @messages.each_index.flat_map { |i| calls_in(i) }
        end

        # @return [Array<Result>] every tool result in the transcript, in order
        def results
          @messages.each_index.flat_map { |i| results_in(i) }
        end

        # The provider's 400 for a broken transcript, as a FakeProvider step, or nil.
        # @return [Hash, nil]
        def rejection
          problem = case @api
                    when :anthropic then anthropic_id_problem || anthropic_problem || anthropic_thinking_problem
                    when :responses then responses_problem || reasoning_problem
                    when :bedrock then bedrock_problem
                    when :gemini then gemini_problem
                    else openai_id_problem || openai_problem
                    end
          return nil unless problem

          message, param, code = problem
          if @api == :bedrock
            { status: 400, headers: { "x-amzn-errortype" => "ValidationException#{CannedErrors::BEDROCK_NAMESPACE}" },
              body: { "message" => message } }
          elsif @api == :gemini
            { status: 400, body: { "error" => { "code" => 400, "message" => message, "status" => "INVALID_ARGUMENT" } } }
          elsif @api == :anthropic
            { status: 400, headers: { "x-should-retry" => "false" },
              body: { "type" => "error", "error" => { "type" => "invalid_request_error", "message" => message },
                      "request_id" => "req_#{SecureRandom.alphanumeric(24)}" } }
          else
            { status: 400,
              body: { "error" => { "message" => message, "type" => "invalid_request_error", "param" => param,
                                   "code" => code } } }
          end
        end

        private

        def role(index)
          @messages[index]&.fetch("role", nil)
        end

        def blocks(index)
          content = @messages[index]&.fetch(@api == :gemini ? "parts" : "content", nil)
          content.is_a?(Array) ? content.map { |b| b.is_a?(Hash) ? b : {} } : []
        end

        def calls_in(index)
          return gemini_calls_in(index) if @api == :gemini
          if @api == :responses
            item = @messages[index]
            return item["type"] == "function_call" ? [Call.new(index, 0, item["call_id"], item["name"])] : []
          end
          return [] unless role(index) == "assistant"
          return bedrock_blocks(index, "toolUse").map { |k, b| Call.new(index, k, b["toolUseId"], b["name"]) } if @api == :bedrock

          if @api == :anthropic
            blocks(index).each_with_index.filter_map do |b, k|
              Call.new(index, k, b["id"], b["name"]) if b["type"] == "tool_use"
            end
          else
            list = @messages[index]["tool_calls"]
            return [] unless list.is_a?(Array)

            list.each_with_index.map do |c, k|
              c = {} unless c.is_a?(Hash)
              function = c["function"].is_a?(Hash) ? c["function"] : {}
              Call.new(index, k, c["id"], function["name"])
            end
          end
        end

        def results_in(index)
          return gemini_results_in(index) if @api == :gemini
          if @api == :responses
            item = @messages[index]
            return [] unless item["type"] == "function_call_output"

            return [Result.new(index, 0, item["call_id"], text_of(item["output"]), false)]
          end
          if @api == :bedrock
            return [] unless role(index) == "user"

            bedrock_blocks(index, "toolResult").map do |k, b|
              Result.new(index, k, b["toolUseId"], text_of(b["content"]), b["status"] == "error")
            end
          elsif @api == :anthropic
            return [] unless role(index) == "user"

            blocks(index).each_with_index.filter_map do |b, k|
              next unless b["type"] == "tool_result"

              Result.new(index, k, b["tool_use_id"], text_of(b["content"]), b["is_error"] == true)
            end
          else
            return [] unless role(index) == "tool"

            m = @messages[index]
            [Result.new(index, 0, m["tool_call_id"], text_of(m["content"]), false)]
          end
        end

        # [position, the block's member] of the blocks that hold +member+ (Converse's
        # blocks are {"toolUse": {...}}, {"toolResult": {...}}, {"text": ...}).
        def bedrock_blocks(index, member)
          blocks(index).each_with_index.filter_map { |b, k| [k, b[member]] if b[member].is_a?(Hash) }
        end

        # Bedrock: ids of its pattern, roles that alternate (starting with the user's),
        # the tools whenever a call or result is there, and the results of an assistant
        # turn's calls, each once, in the very next (user) message, nowhere else.
        def bedrock_problem
          calls.each do |c|
            next if c.id.is_a?(String) && BEDROCK_ID.match?(c.id)

            return ["1 validation error detected: Value '#{c.id}' at 'messages.#{c.message}.member.content." \
                    "#{c.position}.member.toolUse.toolUseId' failed to satisfy constraint: Member must satisfy " \
                    "regular expression pattern: [a-zA-Z0-9_-]+"]
          end
          if @messages.each_index.each_cons(2).any? { |a, b| role(a) == role(b) } || role(0) != "user"
            return ["A conversation must alternate between user and assistant roles. Make sure the conversation " \
                    "alternates between user and assistant roles and try again."]
          end
          if !@tool_config && (calls.any? || results.any?)
            return ["The toolConfig field must be defined when using toolUse and toolResult content blocks."]
          end

          # One past the last message too: calls at the end have no results.
          (0..@messages.size).each do |i|
            expected = i.positive? ? calls_in(i - 1).map(&:id) : []
            got = i < @messages.size ? results_in(i).map(&:id) : []
            next if got.sort == expected.sort && got.uniq.size == got.size

            if (got - expected).any? || got.uniq.size != got.size
              return ["The number of toolResult blocks at messages.#{i}.content exceeds the number of toolUse " \
                      "blocks of previous turn."]
            end
            return ["Expected toolResult blocks at messages.#{i}.content for the following Ids: " \
                    "#{(expected - got).join(', ')}"]
          end
          nil
        end

        def text_of(content)
          return content if content.is_a?(String)
          return "" unless content.is_a?(Array)

          content.filter_map { |part| part["text"] if part.is_a?(Hash) && part["text"].is_a?(String) }.join
        end

        # Gemini's calls: functionCall parts of "model" contents (an id only when the
        # model gave one).
        def gemini_calls_in(index)
          return [] unless role(index) == "model"

          blocks(index).each_with_index.filter_map do |b, k|
            fn = b["functionCall"]
            Call.new(index, k, fn["id"], fn["name"]) if fn.is_a?(Hash)
          end
        end

        # Gemini's results: functionResponse parts of "user" contents, paired with their
        # call by order and name (the id, when sent, is the name's stand-in here).
        def gemini_results_in(index)
          return [] unless role(index) == "user"

          blocks(index).each_with_index.filter_map do |b, k|
            fr = b["functionResponse"]
            next unless fr.is_a?(Hash)

            response = fr["response"].is_a?(Hash) ? fr["response"] : {}
            text = [response["output"], response["error"]].find { |v| v.is_a?(String) } || JSON.generate(response)
            Result.new(index, k, fr["id"] || fr["name"], text, response.key?("error"))
          end
        end

        # Gemini: a model turn's calls are answered by the very next user content, as many
        # functionResponse parts as calls, in their order; its 3 models refuse a step of
        # the current turn (after the last user text) whose first call is not signed, and
        # a signature made for another protocol or lane.
        def gemini_problem
          @messages.each_index do |i|
            calls = gemini_calls_in(i)
            next if calls.empty?

            answers = gemini_results_in(i + 1)
            if answers.size != calls.size
              return ["Please ensure that the number of function response parts is equal to the number of function " \
                      "call parts of the function call turn."]
            end
            if answers.map(&:id) != calls.map { |c| c.id || c.name }
              return ["Please ensure that function response turn comes immediately after a function call turn, " \
                      "and its function response parts name the calls in order."]
            end
          end
          gemini_signature_problem
        end

        def gemini_signature_problem
          # One it did not make (another server's, the sentinel) passes: a real host's too.
          foreign = @messages.each_index.flat_map { |i| blocks(i).filter_map { |b| b["thoughtSignature"] } }.find do |sig|
            SealedState.read(sig) && !SealedState.returns_to?(sig, api: @api, lane: @request&.lane)
          end
          return ["Corrupted thought signature."] if foreign
          return nil unless @request&.path_model.to_s.start_with?("gemini-3")

          asked = @messages.each_index.select { |i| role(i) == "user" && blocks(i).none? { |b| b.key?("functionResponse") } }
          ((asked.last || -1) + 1...@messages.size).each do |i|
            first = gemini_calls_in(i).first
            next if first.nil? || blocks(i)[first.position].key?("thoughtSignature")

            return ["Function call is missing a thought_signature in functionCall parts. This is required for tools " \
                    "to work correctly, and missing thought_signature may lead to degraded model performance. " \
                    "Additional data, function call `default_api:#{first.name}` , position #{first.position + 1}. " \
                    "Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."]
          end
          nil
        end

        # With thinking enabled in the request, Anthropic wants the thinking block (or
        # redacted_thinking) back, first, in the last assistant message that called tools:
        # the turn the tool results continue. Without thinking in the request, none is needed.
        def anthropic_thinking_problem
          return nil unless @thinking

          at = @messages.rindex { |m| m["role"] == "assistant" }
          return nil unless at && blocks(at).any? { |b| b["type"] == "tool_use" }
          return nil if %w[thinking redacted_thinking].include?(blocks(at).first&.fetch("type", nil))

          found = blocks(at).first&.fetch("type", nil)
          ["messages.#{at}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `#{found}`. " \
           "When `thinking` is enabled, a final `assistant` message must start with a thinking block " \
           "(preceeding the lastmost set of `tool_use` and `tool_result` blocks)."]
        end

        # Anthropic checks every id against its pattern before it pairs calls and results.
        def anthropic_id_problem
          calls.each do |c|
            next if c.id.is_a?(String) && ANTHROPIC_ID.match?(c.id)

            return ["messages.#{c.message}.content.#{c.position}.tool_use.id: String should match pattern " \
                    "'^[a-zA-Z0-9_-]+$'"]
          end
          results.each do |r|
            next if r.id.is_a?(String) && ANTHROPIC_ID.match?(r.id)

            return ["messages.#{r.message}.content.#{r.position}.tool_result.tool_use_id: String should match " \
                    "pattern '^[a-zA-Z0-9_-]+$'"]
          end
          nil
        end

        # OpenAI refuses a tool call id longer than it makes them.
        def openai_id_problem
          calls.each do |c|
            next unless c.id.is_a?(String) && c.id.length > OPENAI_ID_MAX

            where = "messages[#{c.message}].tool_calls[#{c.position}].id"
            return ["Invalid '#{where}': string too long. Expected a string with maximum length #{OPENAI_ID_MAX}, " \
                    "but got a string with length #{c.id.length} instead.", where, "string_above_max_length"]
          end
          nil
        end

        # Anthropic: the results of an assistant turn's tool_use blocks are tool_result
        # blocks of the very next (user) turn; a result anywhere else is unexpected.
        # Consecutive messages of one role are one turn, as Anthropic merges them (the
        # recordings hold a result per message after a three-call turn).
        def anthropic_problem
          turns = @messages.each_index.chunk_while { |a, b| role(a) == role(b) }.to_a
          turns.each_with_index do |turn, t|
            previous = t.positive? && role(turns[t - 1].first) == "assistant" ? turns[t - 1] : []
            expected = previous.flat_map { |i| calls_in(i) }.map(&:id)
            seen = []
            turn.flat_map { |i| results_in(i) }.each do |result|
              where = "messages.#{result.message}.content.#{result.position}"
              unless expected.include?(result.id)
                return ["#{where}: unexpected `tool_use_id` found in `tool_result` blocks: #{result.id}. Each " \
                        "`tool_result` block must have a corresponding `tool_use` block in the previous message."]
              end
              if seen.include?(result.id)
                return ["#{where}: each tool_use must have a single result. Found multiple `tool_result` blocks " \
                        "with id: #{result.id}"]
              end

              seen << result.id
            end
            calls = turn.flat_map { |i| calls_in(i) }
            next if calls.empty?

            following = t + 1 < turns.size && role(turns[t + 1].first) == "user" ? turns[t + 1] : []
            missing = calls.map(&:id) - following.flat_map { |i| results_in(i) }.map(&:id)
            next if missing.empty?

            return ["messages.#{calls.first.message}: `tool_use` ids were found without `tool_result` blocks " \
                    "immediately after: #{missing.join(', ')}. Each `tool_use` block must have a corresponding " \
                    "`tool_result` block in the next message."]
          end
          nil
        end

        # The Responses API pairs items by call_id: every function_call_output after its
        # function_call, every function_call with its output.
        def responses_problem
          seen = []
          answered = results.map(&:id)
          @messages.each_index do |i|
            calls_in(i).each { |c| seen << c.id }
            results_in(i).each do |r|
              next if seen.include?(r.id)

              return ["No tool call found for function call output with call_id #{r.id}.", "input"]
            end
          end
          missing = calls.find { |c| !answered.include?(c.id) }
          missing ? ["No tool output found for function call #{missing.id}.", "input"] : nil
        end

        # A reasoning item must carry an encrypted_content this server gave as final, for
        # this lane: the one of output_item.done or of the response, not output_item.added's
        # (OpenAI cannot decrypt what it never finished, nor another host's).
        def reasoning_problem
          item = @messages.find do |m|
            m["type"] == "reasoning" && !SealedState.returns_to?(m["encrypted_content"], api: @api, lane: @request&.lane)
          end
          return nil unless item

          shown = item["encrypted_content"].to_s
          ["The encrypted content #{shown[0, 4]}...#{shown[-4..] if shown.size > 8} could not be verified.", nil,
           "invalid_encrypted_content"]
        end

        # OpenAI: an assistant message's tool_calls are answered by the role "tool"
        # messages right after it, one per call id; a tool message anywhere else is refused.
        def openai_problem
          i = 0
          while i < @messages.size
            if role(i) == "tool"
              return ["Invalid parameter: messages with role 'tool' must be a response to a preceeding message " \
                      "with 'tool_calls'.", "messages.[#{i}].role"]
            end

            pending = calls_in(i).map(&:id)
            if pending.empty?
              i += 1
              next
            end

            j = i + 1
            while role(j) == "tool"
              id = @messages[j]["tool_call_id"]
              unless pending.include?(id)
                return ["Invalid parameter: 'tool_call_id' of '#{id}' not found in 'tool_calls' of previous message.",
                        "messages.[#{j}].tool_call_id"]
              end

              pending.delete(id)
              j += 1
            end
            unless pending.empty?
              return ["An assistant message with 'tool_calls' must be followed by tool messages responding to each " \
                      "'tool_call_id'. The following tool_call_ids did not have response messages: " \
                      "#{pending.join(', ')}", "messages.[#{i}].role"]
            end

            i = j
          end
          nil
        end
      end
    end
  end
end
