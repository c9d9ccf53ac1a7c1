# frozen_string_literal: true

require "time"
require_relative "step"

module LlmFailover
  module Testing
    class FakeProvider
      # A host's rate limits as a FakeProvider plays them (`fp.rate_limit`, a lane's
      # `rate_limit`): a window of requests and tokens, full again every +per+ seconds,
      # that each answered request counts down (one request, and its body's bytes / 4
      # plus the max_tokens it asks for as tokens). Every answer says what is left in
      # its host's own headers: OpenAI's (and the Responses API's) x-ratelimit-limit-,
      # -remaining- and -reset-requests / -tokens, the reset a duration ("6m0s"); Azure's
      # x-ratelimit-remaining-requests / -tokens alone; Anthropic's
      # anthropic-ratelimit-requests- / -tokens- limit, remaining and reset (an RFC 3339
      # time). Gemini, Vertex AI and Bedrock send none. A request past the window gets the
      # protocol's 429 (rate_limit) with a Retry-After until the refill, and takes no step.
      #
      # @example
      #   fp.on(:east).rate_limit(requests: 2, per: 30)   # the third request within 30 s: a 429
      class RateLimit
        attr_reader :requests, :tokens, :per

        # @param requests [Integer, nil] requests per window (nil: no limit on them)
        # @param tokens [Integer, nil] tokens per window (nil: no limit on them)
        # @param per [Numeric] seconds of one window
        # @raise [ArgumentError]
        def initialize(requests: nil, tokens: nil, per: 60)
          [[:requests, requests], [:tokens, tokens]].each do |name, value|
            next if value.nil? || (value.is_a?(Integer) && !value.negative?)

            raise ArgumentError, "rate_limit #{name}: must be nil or an Integer of 0 or more, got #{value.inspect}"
          end
          raise ArgumentError, "rate_limit needs requests: or tokens:" if requests.nil? && tokens.nil?
          raise ArgumentError, "rate_limit per: must be a positive number, got #{per.inspect}" unless per.is_a?(Numeric) && per.positive?

          @requests = requests
          @tokens = tokens
          @per = per
          @window_end = nil
        end

        # Counts +request+ in (called under the server's lock).
        # @return [Array(Hash, Step or nil)] the headers its answer carries, and the 429
        #   step it gets instead of its own when the window has nothing left for it
        def take(request)
          now = monotonic
          refill(now) if @window_end.nil? || now >= @window_end
          cost = cost_of(request)
          refused = (@requests && @requests_left < 1) || (@tokens && @tokens_left < cost)
          unless refused
            @requests_left -= 1 if @requests
            @tokens_left -= cost if @tokens
          end
          headers = headers_for(request, @window_end - now)
          [headers, refused ? Step.new(error: :rate_limit, retry_after: (@window_end - now).ceil) : nil]
        end

        private

        def refill(now)
          @requests_left = @requests
          @tokens_left = @tokens
          @window_end = now + @per
        end

        def cost_of(request)
          json = request.json || {}
          asked = json["max_tokens"] || json["max_output_tokens"] || json["max_completion_tokens"]
          ((request.body.bytesize + 3) / 4) + (asked.is_a?(Integer) ? asked : 0)
        end

        def headers_for(request, reset_in)
          case request.api
          when :openai, :responses
            return azure_headers if request.azure_layout

            openai_headers(reset_in)
          when :anthropic then request.vertex? ? {} : anthropic_headers(reset_in)
          else {}
          end
        end

        def openai_headers(reset_in)
          counts("x-ratelimit-%<what>s-%<kind>s") do |kind|
            { "x-ratelimit-reset-#{kind}" => duration(reset_in) }
          end
        end

        def azure_headers
          out = {}
          out["x-ratelimit-remaining-requests"] = @requests_left.to_s if @requests
          out["x-ratelimit-remaining-tokens"] = @tokens_left.to_s if @tokens
          out
        end

        def anthropic_headers(reset_in)
          at = (Time.now.utc + reset_in).iso8601(3)
          counts("anthropic-ratelimit-%<kind>s-%<what>s") { |kind| { "anthropic-ratelimit-#{kind}-reset" => at } }
        end

        # The limit and remaining lines of each limited kind, named by +format+, and the
        # block's reset line.
        def counts(format)
          out = {}
          { "requests" => [@requests, @requests_left], "tokens" => [@tokens, @tokens_left] }.each do |kind, (limit, left)|
            next unless limit

            out[Kernel.format(format, what: "limit", kind: kind)] = limit.to_s
            out[Kernel.format(format, what: "remaining", kind: kind)] = left.to_s
            out.merge!(yield(kind))
          end
          out
        end

        # Seconds as OpenAI writes them: "12.5s", "6m0s".
        def duration(seconds)
          minutes, rest = seconds.divmod(60)
          rest = rest.round(3)
          rest = rest.to_i if rest == rest.to_i
          minutes.positive? ? "#{minutes.to_i}m#{rest}s" : "#{rest}s"
        end

        def monotonic
          Process.clock_gettime(Process::CLOCK_MONOTONIC)
        end
      end
    end
  end
end
