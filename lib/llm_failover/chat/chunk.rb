# frozen_string_literal: true

require_relative "target"

module LlmFailover
  # One streamed piece of an answer, handed to the block of Chat#ask / #complete.
  #
  # A reset chunk (reset? true, content "") means: discard everything shown so far,
  # another target is about to answer from scratch.
  #
  # With tools, two more kinds (content ""), never pieces of a call's arguments:
  # tool_call? (a complete call about to run: #tool_call has its name and arguments)
  # and tool_result? (the call has run: #tool_call has its result or error).
  class Chunk
    # @return [String] the text delta ("" for a reset)
    attr_reader :content
    # @return [Integer] 0, 1, ... within the current answer (a reset starts again at 0)
    attr_reader :index
    # @return [String] the model asked of the target that sent it
    attr_reader :model
    # @return [Symbol] the configured provider name of that target
    attr_reader :provider
    # @return [String] the UUID of the logical call
    attr_reader :request_id
    # @return [ToolCall, nil] for tool_call? and tool_result? chunks
    attr_reader :tool_call

    def initialize(content:, model:, provider:, index:, request_id:, reset: false, tool_call: nil, tool_event: nil)
      @content = content
      @model = model
      @provider = provider
      @index = index
      @request_id = request_id
      @reset = reset ? true : false
      @tool_call = tool_call
      @tool_event = tool_event # :call or :result
      freeze
    end

    def reset?
      @reset
    end

    # A complete tool call about to run (name, arguments in #tool_call).
    def tool_call?
      @tool_event == :call
    end

    # A tool call that has run (result or error in #tool_call).
    def tool_result?
      @tool_event == :result
    end

    # So that `print chunk` prints the text.
    def to_s
      content
    end

    def inspect
      what = if reset? then "RESET"
           elsif @tool_event then "#{@tool_event == :call ? 'TOOL CALL' : 'TOOL RESULT'} #{@tool_call&.name}"
           else content.inspect
           end
    "#<LlmFailover::Chunk #{what} #{Target.label(provider, model)} ##{index}>"
    end
  end
end
