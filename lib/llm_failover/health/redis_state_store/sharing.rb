# frozen_string_literal: true

require "redis-client"
require_relative "../../records/warnings"
require_relative "scripts"

module LlmFailover
  class RedisStateStore
    # How RedisStateStore reaches Redis: a connection pool per process, the scripts
    # loaded on demand, and an outage during which every operation goes to the
    # process's own MemoryStateStore (@fallback).
    #
    # @api private: included by RedisStateStore
    module Sharing
      private

      # Runs the block with a connection, or the fallback's method of the same name while
      # Redis is down. Only a failing connection makes an outage: an unreadable key is
      # reset (+repair+) and a refused command sends this operation alone to the fallback.
      # Each operation carries the epoch it began in, so that however many threads are in
      # flight an outage is one warning and its end one notice.
      def shared(name, *args, repair: nil, **keywords)
        return @fallback.public_send(name, *args, **keywords) if @down_until && monotonic < @down_until

        epoch = @epoch
        result = pool.with { |redis| on_live_connection(redis) { with_scripts(redis) { repairing(redis, repair) { yield redis } } } }
        back_up(epoch) if @down
        result
      rescue ConnectionPool::TimeoutError
        # More threads than connections, all busy: this call only, Redis is not down.
        @fallback.public_send(name, *args, **keywords)
      rescue RedisClient::CommandError => e
        refused(e)
        @fallback.public_send(name, *args, **keywords)
      rescue RedisClient::Error, SystemCallError, IOError => e
        went_down(e, epoch)
        @fallback.public_send(name, *args, **keywords)
      end

      # A pooled connection that Redis closed while it sat idle (a restart, Redis's own
      # idle timeout) fails at its first use although Redis is up: once more, on a new
      # connection (redis-client reconnects a client whose connection failed). Not after
      # a timeout (the command may have run) nor when connecting failed (Redis is down).
      def on_live_connection(redis)
        yield
      rescue RedisClient::TimeoutError, RedisClient::CannotConnectError
        raise
      rescue RedisClient::ConnectionError
        yield
      end

      # EVALSHA until the scripts are loaded (a new or restarted Redis).
      def with_scripts(redis)
        yield
      rescue RedisClient::CommandError => e
        raise unless e.message.start_with?("NOSCRIPT")

        Scripts::SCRIPTS.each_value { |src| redis.call("SCRIPT", "LOAD", src) }
        yield
      end

      # A value the gem cannot read (garbage in a counter, a key of the wrong type) fails
      # the script over that key alone: the key is reset, said once, and the operation
      # runs again. Nothing else is touched, and Redis is not "down".
      def repairing(redis, keys)
        yield
      rescue RedisClient::CommandError => e
        raise if keys.nil? || keys.empty? || e.message.start_with?("NOSCRIPT")

        reset(redis, keys, e)
        yield
      end

      def reset(redis, keys, error)
        redis.call("DEL", *keys)
        once(keys.first, "llm_failover: Redis key #{keys.first} held a value the gem cannot read " \
                         "(#{error.message.lines.first.strip}); reset it, sharing goes on")
      end

      # One pipelined script per key, each key's error its own: a NOSCRIPT goes to
      # with_scripts, another error resets that key (#repairing) and runs its script again.
      def per_key(redis, keys, &command)
        replies = redis.pipelined(exception: false) { |p| keys.each { |key| p.call(*command.call(key)) } }
        replies.each_with_index.map do |reply, i|
          next reply unless reply.is_a?(RedisClient::CommandError)
          raise reply if reply.message.start_with?("NOSCRIPT")

          reset(redis, target_keys(keys[i]), reply)
          redis.call(*command.call(keys[i]))
        end
      end

      # Redis refused a command (not a connection failure): this operation goes to the
      # fallback, said once per kind of refusal.
      def refused(error)
        kind = error.message[/\A\S+/].to_s
        once("refused:#{kind}", "llm_failover: Redis refused a command (#{error.message.lines.first.strip}); " \
                                "this operation used this process's own state")
      end

      def once(topic, message)
        first = @lock.synchronize do
          next false if @said.include?(topic) || @said.size >= 1000

          @said << topic
        end
        say(:warn, message) if first
      end

      def pool
        return @pool if @pid == Process.pid

        @lock.synchronize do
          unless @pid == Process.pid
            # A forked child never uses its parent's sockets.
            @pool = @config.new_pool(size: @pool_size, timeout: POOL_WAIT)
            @pid = Process.pid
          end
        end
        @pool
      end

      # +epoch+: the one the failed operation began in. One that began while Redis was up
      # declares the outage (the first of them only); one that began during it (a retry)
      # keeps it for another RETRY_AFTER; one that began before a recovery changes nothing.
      def went_down(error, epoch)
        first = @lock.synchronize do
          next false unless epoch == @epoch

          @down_until = monotonic + RETRY_AFTER
          next false if @down

          @down = true
          @epoch += 1
        end
        return unless first

        say(:warn, "llm_failover: Redis state store unreachable (#{error.class}: #{error.message}); " \
                   "going on with this process's own state until it is back")
      end

      # Only an operation that began during the outage (a retry) ends it.
      def back_up(epoch)
        was_down = @lock.synchronize do
          next false unless @down && epoch == @epoch

          @down = false
          @down_until = nil
          @epoch += 1
        end
        say(:info, "llm_failover: Redis state store reachable again; sharing resumed") if was_down
      end

      # Warnings go through Warnings.warn: the store's own logger, else c.logger (the
      # generated initializer builds the store without one: an outage belongs in the
      # app's log), else stderr. The all-clear only to a logger.
      def say(level, message)
        return Warnings.warn(message.delete_prefix("llm_failover: "), logger: @logger || LlmFailover.configuration.logger) if level == :warn

        @logger&.public_send(level, message)
      rescue StandardError
        nil
      end

      def monotonic
        Process.clock_gettime(Process::CLOCK_MONOTONIC)
      end
    end
  end
end
