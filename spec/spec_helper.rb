# frozen_string_literal: true

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)

require "json"
require "logger"
require "stringio"
require "pp"
require_relative "support/gem_warnings"

# The machine's cloud credentials never reach a spec: a Vertex AI or Bedrock provider
# configured without one takes the ambient ones (GOOGLE_APPLICATION_CREDENTIALS, AWS_*),
# and aws-sdk-core's chain, where a spec loads it, never asks the EC2 metadata endpoint.
ENV.delete("GOOGLE_APPLICATION_CREDENTIALS")
ENV["AWS_EC2_METADATA_DISABLED"] = "true"
require "llm_failover"
require "llm_failover/testing"
require_relative "support/list_store"

# How many times slower than a plain run this one is: `rake spec:valgrind` sets
# LLM_FAILOVER_SPEC_SLOWDOWN, since Ruby under valgrind runs tens of times slower.
# Only durations that must outlast some work are multiplied by it: deadlines that
# are there so that a hang fails the example, a slow answer that other calls must
# finish during. What a spec checks stays the same. An example whose check is about
# a short cooldown elapsing between its calls (or not) is tagged :timing instead,
# and the valgrind task leaves it out: there the calls themselves outlast it.
module SpecTime
  SLOWDOWN = Float(ENV.fetch("LLM_FAILOVER_SPEC_SLOWDOWN", "1"))

  # @return [Float] +seconds+ stretched by the run's slowdown
  def self.scaled(seconds)
    seconds * SLOWDOWN
  end
end

# GC.verify_compaction_references, moving every object it can: the option that grows the
# heap first is expand_heap since Ruby 3.2 (double_heap, deprecated there) and
# double_heap before.
module SpecGC
  def self.compact_everything
    grow = GC.method(:verify_compaction_references).parameters.include?(%i[key expand_heap]) ? :expand_heap : :double_heap
    GC.verify_compaction_references(grow => true, toward: :empty)
  end
end

# Real FakeProviders on loopback, started per example and stopped after it.
module FakeProviderHelpers
  PRIMARY_KEY = "sk-test-SECRET123"
  BACKUP_KEY = "sk-ant-SECRET456"

  # @return [LlmFailover::Testing::FakeProvider] a started server, stopped after the example
  def start_fake_provider(**options)
    fp = LlmFailover::Testing::FakeProvider.start(**options)
    (@fake_providers ||= []) << fp
    fp
  end

  def stop_fake_providers
    (@fake_providers || []).each(&:stop)
    @fake_providers = nil
  end

  # Fast, deterministic policy for specs: short waits, no jitter, and deadlines short
  # enough that a hang fails the example instead of the suite (under valgrind, long
  # enough for a TLS handshake: SpecTime).
  def fast_policy(c)
    c.retry_interval = 0.01
    c.retry_interval_randomness = 0
    c.retry_backoff_factor = 1
    c.connect_timeout = SpecTime.scaled(2)
    c.first_token_timeout = SpecTime.scaled(5)
    c.idle_timeout = SpecTime.scaled(5)
    c.request_timeout = SpecTime.scaled(10)
  end

  # Collects every Chunk a call yields.
  def collect_chunks
    chunks = []
    [chunks, ->(chunk) { chunks << chunk }]
  end
end

# Two FakeProviders: :openai (primary, OpenAI protocol) and :anthropic (backup,
# Anthropic protocol), each its own server so their request counts stay apart.
RSpec.shared_context "with fake providers" do
  let(:primary) { start_fake_provider }
  let(:backup) { start_fake_provider }

  before do
    LlmFailover.configure do |c|
      c.provider :openai, api: :openai, api_key: FakeProviderHelpers::PRIMARY_KEY,
                          base_url: primary.base_url(:openai)
      c.provider :anthropic, api: :anthropic, api_key: FakeProviderHelpers::BACKUP_KEY,
                             base_url: backup.base_url(:anthropic)
      fast_policy(c)
    end
  end

  # A chat with gpt-4o on :openai and a claude backup on :anthropic.
  def failover_chat(**options)
    LlmFailover.chat(model: "gpt-4o", provider: :openai,
                     backup_model: "claude-sonnet-4-6", backup_provider: :anthropic, **options)
  end

  # The messages a recorded request carried, as [role, text] pairs (Anthropic content
  # may be a String or an Array of text blocks).
  def sent_messages(request)
    request.json.fetch("messages").map do |m|
      content = m["content"]
      text = content.is_a?(Array) ? content.map { |b| b["text"] }.join : content
      [m["role"], text]
    end
  end
end

RSpec.configure do |config|
  config.include FakeProviderHelpers
  config.disable_monkey_patching!
  config.expect_with(:rspec) { |c| c.syntax = :expect }
  config.order = :random
  Kernel.srand config.seed

  config.before { LlmFailover.reset_configuration! }
  config.after do
    stop_fake_providers
    LlmFailover.reset_configuration!
  end
end
