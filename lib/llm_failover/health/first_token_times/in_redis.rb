# frozen_string_literal: true

require_relative "../first_token_times"

module LlmFailover
  module FirstTokenTimes
    # RedisStateStore's samples: a list per target, NS:{KEY}:ttft (the circuit's hash
    # tag), newest first, trimmed to WINDOW; the fallback keeps them while Redis is down.
    module InRedis
      def record_first_tokens(key, seconds_list)
        return nil if seconds_list.empty?

        shared(:record_first_tokens, key, seconds_list) do |redis|
          redis.pipelined do |p|
            p.call("LPUSH", ttft_key(key), *seconds_list.map { |s| s.to_f.to_s })
            p.call("LTRIM", ttft_key(key), 0, WINDOW - 1)
          end
          nil
        end
      end

      def first_token_times(key)
        shared(:first_token_times, key) do |redis|
          redis.call("LRANGE", ttft_key(key), 0, WINDOW - 1).map(&:to_f)
        end
      end

      private

      def ttft_key(key)
        "#{namespace}:{#{key}}:ttft"
      end
    end
  end
end
