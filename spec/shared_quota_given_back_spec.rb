# frozen_string_literal: true

require "spec_helper"
require "socket"
require "timeout"

# A shared quota's unit given back when no request reached the primary: the call
# stopped before its first request, or the primary's connect timed out (doc/guarantees.md
# links the promise to these examples).
RSpec.describe "Hardening: a shared quota's unit when nothing reached the primary" do
  include_context "with fake providers"

  let(:key) { "tenant-#{rand(1 << 30)}" }
  let(:used) { -> { LlmFailover::Quota.live(key: key, limit: 3, window: :day).used } }

  before do
    LlmFailover.configure { |c| c.max_retries = 0 }
    primary.default = { text: "primary" }
    backup.default = { text: "backup" }
  end

  def chat(**options)
    failover_chat(quota: 3, quota_key: key, quota_window: :day, **options)
  end

  # A cache whose read never returns: the call is stopped after its reservation and
  # before any request.
  def stuck_cache(entered)
    Object.new.tap do |store|
      store.define_singleton_method(:read) do |_key|
        entered << true
        Queue.new.pop
      end
      store.define_singleton_method(:write) { |*_args, **_opts| nil }
    end
  end

  it "is given back when Thread#kill stops the call before its first request" do
    entered = Queue.new
    LlmFailover.configure { |c| c.cache = stuck_cache(entered) }
    thread = Thread.new { chat.ask("hi") }
    entered.pop
    thread.kill.join
    expect([primary.request_count, used.call]).to eq([0, 0])
  end

  it "is given back when Timeout.timeout stops the call before its first request" do
    stop = Class.new(Exception) # rubocop:disable Lint/InheritException -- as Timeout's own is not a StandardError
    LlmFailover.configure { |c| c.cache = stuck_cache(Queue.new) }
    expect { Timeout.timeout(0.2, stop) { chat.ask("hi") } }.to raise_error(stop)
    expect([primary.request_count, used.call]).to eq([0, 0])
  end

  it "is given back when the primary's connect timed out and the backup answered" do
    # A listener whose accept queue is full: a connect to it is never answered.
    black_hole = TCPServer.new("127.0.0.1", 0)
    black_hole.listen(0)
    filler = Socket.tcp("127.0.0.1", black_hole.addr[1])
    LlmFailover.configure do |c|
      c.connect_timeout = 0.2
      c.provider :openai, api: :openai, api_key: FakeProviderHelpers::PRIMARY_KEY,
                          base_url: "http://127.0.0.1:#{black_hole.addr[1]}/v1"
    end
    reply = chat.ask("hi")
    expect(reply.provider).to eq(:anthropic)
    expect(reply.attempts.first.error_class).to eq("LlmFailover::TimeoutError")
    expect(used.call).to eq(0)
  ensure
    filler&.close
    black_hole&.close
  end
end
