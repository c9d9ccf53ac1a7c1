# frozen_string_literal: true

# Engine#run on its own, as bench/clients.rb (the "engine" client) and
# bench/ruby_layer.rb time it: the request chat.ask builds for one "Hello" to the
# provider :bench, and a listener that does nothing with what it is told.
module Bench
  module EngineCall
    # No store, no records, no Reply.
    class NullListener
      def on_chunk(*) = nil
      def on_reset = nil
      def on_attempt(_) = nil
    end

    def self.request(config, model)
      { targets: [config.provider_config(:bench).engine_target(model)], messages: [%w[user Hello]],
        system: nil, temperature: nil, max_tokens: nil, stream: false, policy: config.engine_policy }
    end
  end
end
