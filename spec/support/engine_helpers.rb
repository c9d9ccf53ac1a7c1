# frozen_string_literal: true

# Drives LlmFailover::Engine directly, below the Chat, against FakeProviders.
module EngineHelpers
  # Records what the engine reports, the way the Chat's listener would.
  class RecordingListener
    attr_reader :chunks, :resets, :attempts, :events

    def initialize(&on_chunk)
      @chunks = []
      @resets = 0
      @attempts = []
      @events = []
      @on_chunk = on_chunk
    end

    def on_chunk(text, _target = nil)
      @chunks << text
      @events << [:chunk, text]
      @on_chunk&.call(text)
    end

    def on_reset(_target = nil)
      @resets += 1
      @events << [:reset]
    end

    def on_attempt(attempt)
      @attempts << attempt
      @events << [:attempt, attempt.attempt]
    end
  end

  POLICY = {
    max_retries: 0, retry_interval: 0.01, retry_backoff_factor: 1, retry_max_interval: 5,
    retry_interval_randomness: 0, connect_timeout: 2, first_token_timeout: 5, idle_timeout: 5,
    request_timeout: 10, failover_on_context_length: false, max_response_bytes: 32 * 1024 * 1024
  }.freeze

  # Polls until the block is true; fails the example instead of hanging the suite.
  # Inside an Async reactor, give the task: its sleep lets the other fibers run.
  def wait_for(limit: 10, task: nil)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + limit
    until yield
      raise "condition not met within #{limit}s" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      task ? task.sleep(0.01) : sleep(0.01)
    end
  end

  def engine_target(fp, api: :openai, model: "gpt-4o", api_key: "sk-test-SECRET123", **options)
    LlmFailover::Engine::Target.new(key: "#{api}:#{model}", api: api, base_url: fp.base_url(api), api_key: api_key,
                                    model: model, **options)
  end

  # An Engine::Request; +overrides+ are the policy's members or the request's.
  def engine_request(targets, stream: false, messages: [%w[user Hello]], **overrides)
    policy_keys = LlmFailover::Engine::Policy.members
    policy = LlmFailover::Engine::Policy.new(**POLICY.merge(overrides.slice(*policy_keys)))
    LlmFailover::Engine::Request.new(targets: targets.is_a?(Array) ? targets : [targets], messages: messages, stream: stream, policy: policy,
                                     **overrides.except(*policy_keys))
  end
end

RSpec.configure { |c| c.include EngineHelpers } if defined?(RSpec)
