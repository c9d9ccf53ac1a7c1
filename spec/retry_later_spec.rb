# frozen_string_literal: true

require "spec_helper"

# Errors that mean "later" carry retry_at; past max_wait_in_call the call raises
# RetryLater instead of sleeping. Real FakeProviders; no time is asserted beyond where
# retry_at points (the provider's Retry-After, the circuits' next probe, the quota
# window's end).
RSpec.describe LlmFailover::RetryLater do
  include_context "with fake providers"

  before do
    LlmFailover.configure do |c|
      c.max_retries = 1
      c.circuit_threshold = 0
    end
  end

  def primary_only(**options)
    LlmFailover.chat(model: "gpt-4o", provider: :openai, **options)
  end

  it "is a RetryableError (retry_on RetryableError and rescue Error still see it)" do
    expect(described_class.ancestors).to include(LlmFailover::RetryableError, LlmFailover::Error)
  end

  it "comes from a 429 whose Retry-After is longer than max_wait_in_call, without sleeping" do
    primary.enqueue({ error: :rate_limit, retry_after: 40 })
    before = Time.now
    error = nil
    expect { primary_only.ask("hi") }.to raise_error(described_class) { |e| error = e }
    expect(primary.request_count).to eq(1) # no retry: the wait is the job's
    expect(error.reason).to eq(:retry_after)
    expect(error.retry_after).to eq(40)
    expect(error.retry_at).to be_between(before + 40, Time.now + 40)
    expect(error.retry_in).to be_between(0, 40)
    expect(error.cause).to be_a(LlmFailover::RateLimitError)
    expect(error.cause.retry_at).to eq(error.retry_at)
    expect(error).to have_attributes(status: 429, provider: :openai, model: "gpt-4o")
    expect(error.attempts.size).to eq(1)
  end

  it "waits inside the call for a Retry-After within max_wait_in_call (per chat)" do
    primary.enqueue({ error: :rate_limit, retry_after: 1 })
    primary.enqueue({ text: "after the wait" })
    expect(primary_only(max_wait_in_call: 2).ask("hi").content).to eq("after the wait")

    primary.enqueue({ error: :rate_limit, retry_after: 1 })
    expect { primary_only(max_wait_in_call: 0.5).ask("hi") }.to raise_error(described_class)
    expect(primary.request_count).to eq(3)
  end

  it "comes from every circuit of the call open until after max_wait_in_call" do
    LlmFailover.configure do |c|
      c.circuit_threshold = 1
      c.circuit_first_probe = 30
      c.circuit_cooldown = 60
    end
    primary.default = { error: :unavailable }
    backup.default = { error: :unavailable }
    before = Time.now
    error = nil
    expect { failover_chat.ask("hi") }.to raise_error(described_class) { |e| error = e }
    expect(error.reason).to eq(:circuits_open)
    expect(error.retry_at).to be_between(before + 30, Time.now + 30) # the first probe of either
    expect(error.cause).to be_a(LlmFailover::ServiceUnavailableError)
    # only one of them open: the backup answers, nothing to wait for
    LlmFailover.configuration.state_store.clear
    backup.default = { text: "backup" }
    expect(failover_chat.ask("again").content).to eq("backup")
  end

  it "leaves a retry_at on a 'later' error within max_wait_in_call, and none on a 4xx" do
    LlmFailover.configuration.retry_max_interval = 5
    primary.enqueue({ error: :rate_limit, retry_after: 20 })
    before = Time.now
    expect { primary_only(max_wait_in_call: 30).ask("hi") }.to raise_error(LlmFailover::RateLimitError) do |e|
      expect(e).not_to be_a(described_class) # longer than retry_max_interval: failed at once, not slept
      expect(e.retry_at).to be_between(before + 20, Time.now + 20)
    end
    primary.enqueue({ error: :bad_request, retry_after: 40 })
    expect { primary_only.ask("hi") }.to raise_error(LlmFailover::BadRequestError) { |e| expect(e.retry_at).to be_nil }
    primary.enqueue({ error: :unauthorized, retry_after: 40 })
    expect { primary_only.ask("hi") }.to raise_error(LlmFailover::UnauthorizedError) do |e|
      expect(e.retry_at).to be_nil
    end
  end

  it "comes from an exhausted quota with enforce_quota, at the end of its window" do
    chat = primary_only(quota: 2, quota_used: 2, enforce_quota: true, quota_window: 3600, max_wait_in_call: 0)
    error = nil
    expect { chat.ask("hi") }.to raise_error(described_class) { |e| error = e }
    expect(primary.request_count).to eq(0)
    expect(error.reason).to eq(:quota)
    expect(error.cause).to be_a(LlmFailover::QuotaExceededError)
    window_end = Time.at((Time.now.to_i / 3600 + 1) * 3600)
    expect(error.retry_at).to be_within(1).of(window_end)
    caught = begin
      chat.ask("again")
    rescue LlmFailover::QuotaExceededError => e # as before RetryLater existed
      e
    end
    expect(caught).to be_a(described_class)
  end
end
