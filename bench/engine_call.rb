# frozen_string_literal: true

# Engine#run on its own, as bench/clients.rb (the "engine" client) and
# bench/ruby_layer.rb time it: the request chat.ask builds for one "Hello" to the
# provider :bench, and a listener that does nothing with what it is told.
module Bench
  module EngineCall
    # No store, no records, no Reply.
    class NullListener
      def on_chunk(*) = nil
      def on_reset(_) = nil
      def on_attempt(_) = nil
    end

    def self.request(config, model)
      LlmFailover::Engine::Request.new(targets: [config.provider_config(:bench).engine_target(model)],
                                       messages: [%w[user Hello]], stream: false, policy: config.engine_policy)
    end

    # What a canned engine reports, as the real one does: an Engine::Attempt, an
    # Engine::Result (Structs the engine makes positionally; the members not given are nil).
    def self.attempt(**fields)
      LlmFailover::Engine::Attempt.new(*LlmFailover::Engine::Attempt.members.map { |m| fields[m] })
    end

    def self.result(**fields)
      LlmFailover::Engine::Result.new(*LlmFailover::Engine::Result.members.map { |m| fields[m] })
    end
  end
end
