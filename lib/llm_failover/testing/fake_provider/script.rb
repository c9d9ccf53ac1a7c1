# frozen_string_literal: true

require_relative "../step"
require_relative "../lane"
require_relative "../rate_limit"

module LlmFailover
  module Testing
    class FakeProvider
      # FakeProvider's script (included in it): the steps queued for chat and
      # embeddings requests, the lanes, the default, hold and release, the request
      # log, clear and reset. Uses the server's @mutex, @gate and its queues.
      module Script
        # Queues steps; each incoming request takes the next one.
        # @param steps [Array<Hash>]
        # @raise [ArgumentError] on an unknown key or a bad value, before anything is queued
        # @return [self]
        def enqueue(*steps)
          built = steps.map { |s| Step.new(s) }
          @mutex.synchronize { @queue.concat(built) }
          self
        end

        # Queues steps for embeddings requests only (an error, a delay, a reset, a model
        # name); with none queued they get the deterministic answer.
        # @return [self]
        def enqueue_embeddings(*steps)
          built = steps.map { |s| Step.new(s) }
          @mutex.synchronize { @embed_queue.concat(built) }
          self
        end

        # Queues steps for OAuth token requests (POST .../token) only: `expires_in:`,
        # `access_token:`, an `error:` (:unauthorized is OAuth's invalid_grant), a delay, a
        # reset; with none queued they get a fresh token valid for an hour.
        # @return [self]
        def enqueue_tokens(*steps)
          built = steps.map { |s| Step.new(s) }
          @mutex.synchronize { @token_queue.concat(built) }
          self
        end

        # @return [Array<Request>] the token requests seen so far (a copy)
        def token_requests
          requests.select(&:token?)
        end

        # The script of the provider named +name+: its own queue, default and request log
        # ({Lane}); configure that provider with `fp.on(name).base_url(api)`.
        # @param name [Symbol, String] the provider's name in the app's configuration
        # @return [Lane] the same one for the same name
        def on(name)
          key = name.to_s.to_sym
          existing = synchronize { @lanes[key] }
          return existing if existing

          lane = Lane.new(self, key) # validates the name outside the lock
          synchronize { @lanes[key] ||= lane }
        end

        # Plays rate limits for the requests outside any lane (RateLimit; a lane has its
        # own, Lane#rate_limit); off: true drops them.
        # @return [self]
        def rate_limit(requests: nil, tokens: nil, per: 60, off: false)
          limit = off ? nil : RateLimit.new(requests: requests, tokens: tokens, per: per)
          @mutex.synchronize { @rate_limit = limit }
          self
        end

        # @return [Hash] the step used when the queue is empty
        def default
          @mutex.synchronize { @default_hash }
        end

        # @param step [Hash] the step to use when the queue is empty
        def default=(step)
          built = Step.new(step)
          @mutex.synchronize do
            @default = built
            @default_hash = step.dup.freeze
          end
        end

        # @return [Boolean] whether broken tool transcripts get a 400 (see #initialize)
        def strict_transcript
          @strict_transcript
        end

        # @param value [Boolean]
        def strict_transcript=(value)
          raise ArgumentError, "strict_transcript must be true or false, got #{value.inspect}" unless [true, false].include?(value)

          @strict_transcript = value
        end

        # @return [Array<Request>] every request seen so far, oldest first (a copy)
        def requests
          @mutex.synchronize { @requests.dup }
        end

        # @return [Integer]
        def request_count
          @mutex.synchronize { @requests.size }
        end

        # @return [Integer] steps still queued
        def queue_size
          @mutex.synchronize { @queue.size }
        end

        # Holds the answer to every request from now on until {#release}: a test sees the
        # requests it expects arrive (#request_count) before any is answered, which shows
        # they were in flight at once.
        # @return [self]
        def hold
          @gate.hold
          self
        end

        # Lets the held requests, and every later one, be answered.
        # @return [self]
        def release
          @gate.release
          self
        end

        # Drops the queued steps and the request log.
        # @return [self]
        def clear
          @mutex.synchronize do
            @queue.clear
            @embed_queue.clear
            @token_queue.clear
            @requests.clear
          end
          self
        end

        # Back to a fresh server on the same port: no queued steps on any lane, no log, the
        # default answers, no held requests, no rate limits, transcripts not checked. What
        # LlmFailover::Testing does between two tests.
        # @return [self]
        def reset
          @mutex.synchronize do
            @queue.clear
            @embed_queue.clear
            @token_queue.clear
            @requests.clear
            @lanes.each_value(&:clear_locked)
            @rate_limit = nil
            @default_hash = { text: DEFAULT_TEXT }.freeze
            @default = Step.new(@default_hash)
          end
          @gate.release
          self.strict_transcript = false
          self
        end
      end
    end
  end
end
