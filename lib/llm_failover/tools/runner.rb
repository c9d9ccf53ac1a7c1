# frozen_string_literal: true

require "json"
require "llm_failover/llm_failover" # the compiled extension: JsonSchema
require_relative "tool_call"
require_relative "toolbox"

module LlmFailover
  module Tools
    # Runs tool calls against a Toolbox. A call that cannot run (unknown tool, bad
    # arguments) is rejected with a message the model can act on; a StandardError from
    # #execute is the call's error result; anything else goes up with the call left
    # running, as a crash would. The loop stores between #prepare and #perform.
    class Runner
      # Longest piece of a JSON parser's message quoted back to the model.
      PARSER_MESSAGE_MAX = 120

      # @param toolbox [Toolbox]
      def initialize(toolbox)
        @toolbox = toolbox
      end

      # Checks a pending (or approved) call; rejects it when it cannot run.
      # @param call [ToolCall]
      # @return [Tool, nil] the tool to run, nil when the call was rejected
      def prepare(call)
        tool = @toolbox[call.name]
        unless tool
          call.reject!(unknown_tool_message(call.name), kind: :unknown_tool)
          return nil
        end

        problem = argument_problem(call, tool)
        if problem
          call.reject!(problem)
          return nil
        end
        tool
      end

      # Runs a prepared call: running, then succeeded or failed.
      # @param call [ToolCall]
      # @param tool [Tool] what #prepare returned
      # @param started [#call, nil] given the call once it is running, before #execute:
      #   the loop stores it so, and a crash leaves it visibly running
      # @return [ToolCall]
      def perform(call, tool, started: nil)
        call.start!
        started&.call(call)
        args = call.arguments.transform_keys(&:to_sym)
        begin
          call.succeed!(tool.execute(**args))
        rescue StandardError => e # a value that is not JSON (NaN) fails in succeed! the same way
          call.fail!(e)
        end
      end

      # @param call [ToolCall]
      # @return [ToolCall] final
      def run(call)
        tool = prepare(call)
        tool ? perform(call, tool) : call
      end

      private

      def unknown_tool_message(name)
        known = @toolbox.names
        list = known.empty? ? "there are no tools" : "the tools are: #{known.join(', ')}"
        "There is no tool named #{JSON.generate(name)} (#{list}). Call one of those, or answer without it."
      end

      def argument_problem(call, tool)
        args = call.arguments
        if args.nil?
          return "The arguments of #{tool.name} must be a JSON object, got #{not_object(call.arguments_json)}. " \
                 "Call it again with a JSON object."
        end

        # The core's checker, the one answers are checked by too (lf_json_schema.h).
        problems = JsonSchema.problems(JSON.generate(tool.schema), args.empty? ? "{}" : call.arguments_json)
        return nil unless problems

        "The arguments of #{tool.name} do not match its parameters: #{problems}. " \
          "Call it again with arguments that do."
      end

      def not_object(text)
        parsed = JSON.parse(text)
        case parsed
        when Array then "an array"
        when String then "a string"
        when nil then "null"
        else "#{parsed.class.name.downcase} #{text.strip[0, 40]}"
        end
      rescue JSON::ParserError, EncodingError => e
        "text that is not JSON (#{e.message.to_s.scrub[0, PARSER_MESSAGE_MAX]})"
      end
    end
  end
end
