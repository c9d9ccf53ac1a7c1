# frozen_string_literal: true

require "json"

module LlmFailover
  module Testing
    class FakeProvider
      # The `error: :symbol` answers of Google's hosts (Gemini on Google AI and on Vertex
      # AI), in the shape they really send (the recorded 400 and 429, and Google's docs):
      # {"error": {"code", "message", "status", "details"}}. What Google answers with 200
      # is a 200 here too: a prompt its filters blocked (promptFeedback.blockReason).
      module GoogleErrors
        HELP = { "@type" => "type.googleapis.com/google.rpc.Help",
                 "links" => [{ "description" => "Learn more about Gemini API quotas",
                               "url" => "https://ai.google.dev/gemini-api/docs/rate-limits" }] }.freeze
        PREPAID = "Your prepayment credits are depleted. Please go to AI Studio at https://ai.studio/projects to " \
                  "manage your project and billing. Learn more at https://ai.google.dev/gemini-api/docs/billing#prepay."

        # name => [status, Google status name, message]
        TABLE = {
          rate_limit: [429, "RESOURCE_EXHAUSTED",
                       "You exceeded your current quota, please check your plan and billing details. For more " \
                       "information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n" \
                       "* Quota exceeded for metric: generativelanguage.googleapis.com/" \
                       "generate_content_paid_tier_input_token_count, limit: 1000000, model: {model}"],
          insufficient_quota: [429, "RESOURCE_EXHAUSTED", PREPAID],
          payment_required: [402, "RESOURCE_EXHAUSTED", PREPAID],
          server: [500, "INTERNAL", "An internal error has occurred. Please retry or report in " \
                                    "https://developers.generativeai.google/guide/troubleshooting"],
          unavailable: [503, "UNAVAILABLE", "The model is overloaded. Please try again later."],
          overloaded: [503, "UNAVAILABLE", "The model is overloaded. Please try again later."],
          unauthorized: [400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key."],
          forbidden: [403, "PERMISSION_DENIED", "Permission denied on resource project fake-project (or it may " \
                                                "not exist)."],
          not_found: [404, "NOT_FOUND", "models/{model} is not found for API version v1beta, or is not supported " \
                                        "for generateContent. Call ListModels to see the list of available models " \
                                        "and their supported methods."],
          bad_request: [400, "INVALID_ARGUMENT", "Invalid JSON payload received. Unknown name \"foo\": Cannot find " \
                                                 "field."],
          context_length: [400, "INVALID_ARGUMENT",
                           "The input token count exceeds the maximum number of tokens allowed (1048576)."]
        }.freeze

        # Vertex AI answers a bad OAuth token with a 401, where Google AI answers a bad key
        # with a 400.
        VERTEX_UNAUTHORIZED = [401, "UNAUTHENTICATED",
                               "Request had invalid authentication credentials. Expected OAuth 2 access token, login " \
                               "cookie or other valid authentication credential. See " \
                               "https://developers.google.com/identity/sign-in/web/devconsole-project."].freeze

        module_function

        # @param name [Symbol] one of CannedErrors::NAMES
        # @param model [String] the request's model, quoted where Google quotes it
        # @param vertex [Boolean] the request came by Vertex AI's route
        # @param retry_after [Numeric, String, nil] the wait a 429 asks for: Google puts it in
        #   the body (RetryInfo's retryDelay), never in a header
        # @return [Array(Integer, Hash, String)] status, headers, JSON body
        def build(name, model:, vertex: false, retry_after: nil)
          return blocked_prompt if name == :content_policy

          status, type, message = vertex && name == :unauthorized ? VERTEX_UNAUTHORIZED : TABLE.fetch(name)
          details = details_for(name, status, model)
          # Google puts the wait in the body (RetryInfo), never in a header.
          unless retry_after.nil?
            delay = retry_after.is_a?(Numeric) ? "#{retry_after}s" : retry_after.to_s
            details << { "@type" => "type.googleapis.com/google.rpc.RetryInfo", "retryDelay" => delay }
          end
          error = { "code" => status, "message" => message.gsub("{model}", model), "status" => type }
          error["details"] = details unless details.empty?
          [status, { "content-type" => "application/json; charset=UTF-8" }, JSON.generate("error" => error)]
        end

        # What Google says beside the message: why a key or a token was refused, which
        # quota a 429 hit.
        def details_for(name, status, model)
          case [name, status]
          in [:unauthorized, 400]
            [{ "@type" => "type.googleapis.com/google.rpc.ErrorInfo", "reason" => "API_KEY_INVALID",
               "domain" => "googleapis.com", "metadata" => { "service" => "generativelanguage.googleapis.com" } }]
          in [:unauthorized, 401]
            [{ "@type" => "type.googleapis.com/google.rpc.ErrorInfo", "reason" => "ACCESS_TOKEN_EXPIRED",
               "domain" => "googleapis.com" }]
          in [:rate_limit, _]
            [HELP, { "@type" => "type.googleapis.com/google.rpc.QuotaFailure",
                     "violations" => [{ "quotaMetric" => "generativelanguage.googleapis.com/" \
                                                         "generate_content_paid_tier_input_token_count",
                                        "quotaId" => "GenerateContentPaidTierInputTokensPerModelPerMinute",
                                        "quotaDimensions" => { "model" => model }, "quotaValue" => "1000000" }] }]
          else []
          end
        end

        # Google's filters blocked the prompt: a 200 with no candidate.
        def blocked_prompt
          body = { "promptFeedback" => { "blockReason" => "SAFETY",
                                         "safetyRatings" => [{ "category" => "HARM_CATEGORY_DANGEROUS_CONTENT",
                                                               "probability" => "HIGH" }] },
                   "usageMetadata" => { "promptTokenCount" => 8, "totalTokenCount" => 8 } }
          [200, { "content-type" => "application/json; charset=UTF-8" }, JSON.generate(body)]
        end
      end
    end
  end
end
