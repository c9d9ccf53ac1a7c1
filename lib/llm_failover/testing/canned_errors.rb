# frozen_string_literal: true

require "json"
require "securerandom"

module LlmFailover
  module Testing
    class FakeProvider
      # Provider-correct error answers for `error: :symbol` steps, in the shape each API
      # really sends (see WIRE.md and the recorded 4xx fixtures).
      module CannedErrors
        # name => [status, openai [type, code, message], anthropic [type, message]]
        TABLE = {
          rate_limit: [429,
                       ["requests", "rate_limit_exceeded",
                        "Rate limit reached for requests per min (RPM): Limit 500, Used 500, Requested 1. " \
                        "Please try again in 120ms."],
                       ["rate_limit_error",
                        "This request would exceed your organization's rate limit of 50 requests per minute."]],
          insufficient_quota: [429,
                               ["insufficient_quota", "insufficient_quota",
                                "You exceeded your current quota, please check your plan and billing details."],
                               nil],
          server: [500,
                   ["server_error", nil,
                    "The server had an error while processing your request. Sorry about that!"],
                   ["api_error", "Internal server error"]],
          unavailable: [503,
                        ["server_error", nil, "The server is overloaded or not ready yet."],
                        ["api_error", "Service unavailable"]],
          overloaded: [529,
                       ["overloaded_error", "overloaded_error", "Overloaded"],
                       ["overloaded_error", "Overloaded"]],
          unauthorized: [401,
                         ["invalid_request_error", "invalid_api_key",
                          "Incorrect API key provided: sk-fake***. You can find your API key at " \
                          "https://platform.openai.com/account/api-keys."],
                         ["authentication_error", "invalid x-api-key"]],
          forbidden: [403,
                      ["invalid_request_error", "model_not_allowed",
                       "You are not allowed to sample from this model."],
                      ["permission_error", "Your API key does not have permission to use the specified resource."]],
          not_found: [404,
                      ["invalid_request_error", "model_not_found",
                       "The model `{model}` does not exist or you do not have access to it."],
                      ["not_found_error", "model: {model}"]],
          bad_request: [400,
                        ["invalid_request_error", nil, "Invalid request: 'messages' is malformed."],
                        ["invalid_request_error", "messages: at least one message is required"]],
          context_length: [400,
                           ["invalid_request_error", "context_length_exceeded",
                            "This model's maximum context length is 128000 tokens. However, your messages " \
                            "resulted in 250000 tokens. Please reduce the length of the messages."],
                           ["invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"]],
          content_policy: [400,
                           ["invalid_request_error", "content_policy_violation",
                            "Your request was rejected as a result of our safety system (content policy violation)."],
                           ["invalid_request_error",
                            "Your request was blocked because it violates our content policy."]],
          payment_required: [402,
                             ["payment_required", 402,
                              "Insufficient credits. Add more using https://openrouter.ai/settings/credits"],
                             ["billing_error",
                              "Your credit balance is too low to access the API. Please go to Plans & Billing."]]
        }.freeze

        NAMES = TABLE.keys.freeze

        # Bedrock's answers: name => [status, the exception x-amzn-errortype names, message].
        # Bedrock names its errors by that header alone; its body is {"message": ...}. It has
        # no billing errors (insufficient_quota and payment_required keep the OpenAI shape),
        # no 529 (overloaded is a model not ready, a 429 the name makes a ServiceUnavailable),
        # and a wrong key is a 403 (the recordings' UnrecognizedClientException).
        BEDROCK = {
          rate_limit: [429, "ThrottlingException", "Too many requests, please wait before trying again."],
          server: [500, "InternalServerException", "The server encountered an internal error while processing the request."],
          unavailable: [503, "ServiceUnavailableException", "Bedrock is unable to process your request."],
          overloaded: [429, "ModelNotReadyException",
                       "Model is not ready to serve inference requests. Try your request again later."],
          unauthorized: [403, "UnrecognizedClientException", "The security token included in the request is invalid."],
          forbidden: [403, "AccessDeniedException", "You don't have access to the model with the specified model ID."],
          not_found: [404, "ResourceNotFoundException", "Model not found: {model}"],
          bad_request: [400, "ValidationException", "Malformed input request: #: required key [messages] not found"],
          context_length: [400, "ValidationException",
                           "The model returned the following errors: Input Tokens Exceeded: Number of input tokens " \
                           "exceeds maximum length. Please update the input to try again."],
          content_policy: [400, "ValidationException",
                           "The model returned the following errors: Output blocked by content filtering policy"]
        }.freeze

        # The rest of x-amzn-errortype after the name, as Bedrock sends it.
        BEDROCK_NAMESPACE = ":http://internal.amazon.com/coral/com.amazon.bedrock/"

        module_function

        # @param name [Symbol] one of NAMES
        # @param api [Symbol] :openai, :anthropic or :bedrock
        # @param model [String, nil] the request's model, quoted by :not_found
        # @return [Array(Integer, Hash, String)] status, headers (lowercase names), JSON body
        def build(name, api, model: nil)
          status, oa, an = TABLE.fetch(name) { raise ArgumentError, "unknown FakeProvider error #{name.inspect}" }
          fill = model || "fake-model"
          if api == :bedrock && BEDROCK.key?(name)
            status, exception, message = BEDROCK[name]
            return [status, { "x-amzn-errortype" => exception + BEDROCK_NAMESPACE },
                    JSON.generate("message" => message.sub("{model}", fill))]
          end

          headers = {}
          body =
            if api == :anthropic && an
              headers["x-should-retry"] = "false" if [400, 401].include?(status)
              { "type" => "error",
                "error" => { "type" => an[0], "message" => an[1].sub("{model}", fill) },
                "request_id" => "req_#{SecureRandom.hex(12)}" }
            else
              type, code, message = oa
              err = { "message" => message.sub("{model}", fill), "type" => type, "param" => nil, "code" => code }
              # insufficient_quota keeps the OpenAI shape on both APIs (no Anthropic equivalent);
              # the top-level "type" lets an Anthropic parser still find error.type.
              api == :anthropic ? { "type" => "error", "error" => err } : { "error" => err }
            end
          [status, headers, JSON.generate(body)]
        end
      end
    end
  end
end
