# frozen_string_literal: true

module LlmFailover
  module FirstTokenTimes
    # MemoryStateStore's samples: this process's own, under the store's lock. A
    # RedisStateStore falls back to them while Redis cannot be reached.
    module InMemory
      def record_first_tokens(key, seconds_list)
        return nil if seconds_list.empty?

        synchronize do
          list = (@first_tokens ||= {})[key] ||= []
          list.unshift(*seconds_list.reverse.map(&:to_f))
          list.pop(list.size - WINDOW) if list.size > WINDOW
        end
        nil
      end

      def first_token_times(key)
        synchronize { (@first_tokens ||= {}).fetch(key, []).dup }
      end
    end
  end
end
