# frozen_string_literal: true

require_relative "step"
require_relative "rate_limit"

module LlmFailover
  module Testing
    class FakeProvider
      # One provider's own script on a FakeProvider: its queue, its default and its log.
      # A provider configured with `fp.on(:openai).base_url(:openai)` sends its requests
      # to a path that names it (`/providers/openai/v1/chat/completions`), so its requests
      # take its own steps: a primary's retries never consume a step meant for the backup.
      #
      # A lane's request takes the lane's next step; with none queued there, the server's
      # next shared step ({FakeProvider#enqueue}); then the lane's default if one was set,
      # else the server's.
      #
      # @example
      #   fp.on(:openai).enqueue({ error: :overloaded }, { error: :overloaded })
      #   fp.on(:anthropic).enqueue({ text: "Hi from the backup" })
      #   fp.on(:openai).request_count   # => 2 (with max_retries: 1)
      class Lane
        # What a lane name may be: it goes into a URL path as it is.
        NAME = /\A[A-Za-z0-9_.-]+\z/.freeze

        attr_reader :name

        # @param server [FakeProvider]
        # @param name [Symbol]
        def initialize(server, name)
          raise ArgumentError, "a FakeProvider lane name is letters, digits, _ . or -, got #{name.inspect}" unless name.to_s.match?(NAME)

          @server = server
          @name = name.to_sym
          @queue = []
          @default = nil
          @rate_limit = nil
        end

        # The base_url a provider of that API should be configured with to use this lane.
        # @param api [Symbol] as FakeProvider#base_url takes it
        # @return [String]
        def base_url(api)
          @server.base_url(api).sub(@server.url, "#{@server.url}#{path_prefix}")
        end

        # @return [String] the path every request of this lane starts with
        def path_prefix
          "/providers/#{@name}"
        end

        # Queues steps for this lane's requests only.
        # @param steps [Array<Hash>]
        # @raise [ArgumentError] on an unknown key or a bad value, before anything is queued
        # @return [self]
        def enqueue(*steps)
          built = steps.map { |s| Step.new(s) }
          @server.synchronize { @queue.concat(built) }
          self
        end

        # @return [Hash, nil] the step this lane's requests get when nothing is queued;
        #   nil: the server's default
        def default
          @server.synchronize { @default&.options }
        end

        # @param step [Hash, nil] nil goes back to the server's default
        def default=(step)
          built = step.nil? ? nil : Step.new(step)
          @server.synchronize { @default = built }
        end

        # @return [Array<Request>] this lane's requests, oldest first (a copy)
        def requests
          @server.requests.select { |r| r.lane == @name }
        end

        # @return [Integer]
        def request_count
          requests.size
        end

        # @return [Integer] steps still queued on this lane
        def queue_size
          @server.synchronize { @queue.size }
        end

        # Plays this provider's rate limits (RateLimit): every answer says what is left
        # in the protocol's own headers, a request past them gets a 429. nil: none.
        # @example
        #   fp.on(:east).rate_limit(requests: 100, tokens: 40_000, per: 60)
        # @return [self]
        def rate_limit(requests: nil, tokens: nil, per: 60, off: false)
          limit = off ? nil : RateLimit.new(requests: requests, tokens: tokens, per: per)
          @server.synchronize { @rate_limit = limit }
          self
        end

        # @api private: called under the server's lock
        # @return [RateLimit, nil]
        def rate_limiter
          @rate_limit
        end

        # Drops this lane's queued steps, its default and its rate limits.
        # @return [self]
        def clear
          @server.synchronize { clear_locked }
          self
        end

        # @api private: #clear for a caller holding the server's lock (FakeProvider#reset)
        def clear_locked
          @queue.clear
          @default = nil
          @rate_limit = nil
        end

        # @api private: called under the server's lock
        # @return [Step, nil] the next queued step
        def shift
          @queue.shift
        end

        # @api private: called under the server's lock
        # @return [Step, nil]
        def default_step
          @default
        end

        def inspect
          "#<#{self.class.name} #{@name} queued=#{queue_size}>"
        end
        alias to_s inspect
      end
    end
  end
end
