# frozen_string_literal: true

require_relative "price"

module LlmFailover
  # The most one request of a call can bill, reckoned before it is sent: what a shared
  # quota counted in tokens or dollars reserves (QuotaReservation), so that a fleet
  # overspends a budget by no more than the calls already in flight could cost.
  #
  # Input: every byte of text sent (messages, tool definitions, a schema), since no
  # tokenizer the hosts use makes a token of less than one byte, with room for what
  # each protocol adds around them (roles, separators; Anthropic's system prompt for
  # tools). Attachments are estimates: an image at most IMAGE_TOKENS (Anthropic's and
  # OpenAI's high-detail largest), a document DOCUMENT_TOKENS per DOCUMENT_BYTES.
  # Output: max_tokens when the call sets it, else the model's largest output when the
  # price says it, else DEFAULT_OUTPUT. At the input price throughout: a cache read
  # would only make it cheaper.
  #
  # @api private: built by Chat for a call against a shared quota by :tokens or :usd
  class CallCeiling
    PER_MESSAGE = 8
    PER_REQUEST = 16
    PER_TOOL = 16
    WITH_TOOLS = 600 # Anthropic's tool-use system prompt is ~350 tokens
    IMAGE_TOKENS = 1_600
    DOCUMENT_TOKENS = 3_000
    DOCUMENT_BYTES = 50_000
    # The core's max_tokens for Anthropic when a call sets none (LF_ANTHROPIC_DEFAULT_MAX_TOKENS).
    DEFAULT_OUTPUT = 4_096

    # @param messages [Array<Array>] the engine request's messages ([role, content, calls...])
    # @param attachments [Array<Array<Engine::Attachment>>, nil] per message
    # @param texts [Array<String, nil>] the rest sent as text: tool definitions, a schema
    # @param tools [Integer] how many tools are offered
    # @param max_tokens [Integer, nil] the call's
    def initialize(messages:, attachments: nil, texts: [], tools: 0, max_tokens: nil)
      @input = PER_REQUEST + messages.sum { |message| PER_MESSAGE + text_bytes(message) } +
               texts.sum { |text| text.to_s.bytesize } + (tools.positive? ? WITH_TOOLS + (tools * PER_TOOL) : 0) +
               attachments.to_a.flatten.compact.sum { |file| attachment_tokens(file) }
      @max_tokens = max_tokens
    end

    # @return [Integer] the most input tokens the request can be billed
    def input_tokens
      @input
    end

    # @param price [Price, nil] the target's
    # @return [Integer] the most output tokens
    def output_tokens(price)
      @max_tokens || price&.max_output || DEFAULT_OUTPUT
    end

    # @return [Integer] input and output at most
    def tokens(price)
      input_tokens + output_tokens(price)
    end

    # @return [BigDecimal] USD at +price+
    def cost(price)
      price.cost(input_tokens: input_tokens, output_tokens: output_tokens(price))
    end

    def inspect
      "#<#{self.class.name} input<=#{@input} max_tokens=#{@max_tokens.inspect}>"
    end

    private

    # A message's text, and its tool calls' names and arguments.
    def text_bytes(message)
      message.sum do |part|
        case part
        when String then part.bytesize
        when Array then text_bytes(part)
        else 0
        end
      end
    end

    def attachment_tokens(file)
      return IMAGE_TOKENS if file.mime_type.to_s.start_with?("image/")

      bytes = file.base64 ? file.base64.bytesize * 3 / 4 : DOCUMENT_BYTES
      DOCUMENT_TOKENS * [(bytes.to_f / DOCUMENT_BYTES).ceil, 1].max
    end
  end
end
