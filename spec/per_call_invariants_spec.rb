# frozen_string_literal: true

require "spec_helper"
require "support/engine_helpers"

# What every call and streamed chunk must keep true: request ids, the engine policy and
# targets built once, deltas in order and stored before the block sees them.
RSpec.describe "the hot path" do
  include_context "with fake providers"
  let(:fp) { primary }

  describe "LlmFailover::Engine.uuid" do
    UUID_V4 = /\A\h{8}-\h{4}-4\h{3}-[89ab]\h{3}-\h{12}\z/.freeze

    it "makes version 4 UUIDs, never the same one twice" do
      ids = Array.new(5000) { LlmFailover::Engine.uuid }
      expect(ids).to all(match(UUID_V4))
      expect(ids.uniq.size).to eq(5000)
      # Random bits, not a counter: every hex digit of the random part shows up everywhere.
      expect(ids.map { |id| id[0] }.uniq.size).to eq(16)
    end

    it "gives a forked child ids of its own, not the parent's next ones" do
      LlmFailover::Engine.uuid # the parent's block of random bytes is drawn
      reader, writer = IO.pipe
      pid = fork do
        reader.close
        writer.puts(Array.new(3) { LlmFailover::Engine.uuid }.join(","))
        writer.close
        exit!(0)
      end
      writer.close
      child = reader.read.strip.split(",")
      Process.wait(pid)
      parent = Array.new(3) { LlmFailover::Engine.uuid }
      expect(child.size).to eq(3)
      expect(child & parent).to be_empty
    end

    it "is every call's request id" do
      reply = LlmFailover.chat(model: "gpt-4o", provider: :openai).ask("Hi")
      expect(reply.request_id).to match(UUID_V4)
      expect(reply.attempts.map(&:request_id)).to eq([reply.request_id])
    end
  end

  describe "the engine request's policy" do
    let(:engine) { LlmFailover::Engine.new }

    it "is an Engine::Policy, checked for types (the values are Configuration's to check)" do
      request = ->(**policy) { engine_request(engine_target(fp)).tap { |r| r.policy = r.policy.dup.tap { |p| policy.each { |k, v| p[k] = v } } } }
      expect(engine.run(request.call, EngineHelpers::RecordingListener.new).status).to eq(:ok)
      expect { engine.run(request.call(max_retries: "3"), EngineHelpers::RecordingListener.new) }.to raise_error(TypeError)
      expect { engine.run(request.call(idle_timeout: nil), EngineHelpers::RecordingListener.new) }
        .to raise_error(ArgumentError, /idle_timeout/)
      expect { engine.run(request.call(idle_timeout: "5"), EngineHelpers::RecordingListener.new) }
        .to raise_error(ArgumentError, /idle_timeout must be a number/)
      bare = engine_request(engine_target(fp)).tap { |r| r.policy = EngineHelpers::POLICY }
      expect { engine.run(bare, EngineHelpers::RecordingListener.new) }.to raise_error(TypeError, /Policy/)
    end

    it "is built once per configuration and again after any policy setter" do
      config = LlmFailover::Configuration.new
      first = config.engine_policy
      expect(first).to be_frozen
      expect(config.engine_policy).to equal(first)
      config.max_retries = 7
      expect(config.engine_policy).not_to equal(first)
      expect(config.engine_policy.max_retries).to eq(7)
      LlmFailover::Configuration::ENGINE_POLICY.each do |name|
        before = config.engine_policy
        config.public_send(:"#{name}=", config.public_send(name))
        expect(config.engine_policy).not_to equal(before), "#{name}= kept a stale policy"
      end
    end

    it "follows every setter on the next call" do
      LlmFailover.configuration.max_retries = 2
      LlmFailover.configuration.retry_interval = 0
      2.times { fp.enqueue({ status: 503 }) }
      reply = LlmFailover.chat(model: "gpt-4o", provider: :openai).ask("Hi")
      expect(reply.attempts.map(&:success?)).to eq([false, false, true])
      LlmFailover.configuration.max_retries = 0
      fp.enqueue({ status: 503 })
      expect { LlmFailover.chat(model: "gpt-4o", provider: :openai).ask("Hi") }
        .to raise_error(LlmFailover::ServiceUnavailableError) { |e| expect(e.attempts.size).to eq(1) }
    end

    it "follows a per-chat override and leaves the global one alone" do
      LlmFailover.configuration.engine_policy # cached on the global configuration
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai, max_retries: 0)
      expect(chat.config.engine_policy.max_retries).to eq(0)
      expect(LlmFailover.configuration.engine_policy.max_retries).to eq(LlmFailover.configuration.max_retries)
    end
  end

  describe "streamed deltas" do
    let(:engine) { LlmFailover::Engine.new }

    it "come one on_chunk per delta, in order, before the attempt's record" do
      chunks = Array.new(50) { |i| "w#{i} " }
      fp.enqueue({ chunks: chunks })
      listener = EngineHelpers::RecordingListener.new
      result = engine.run(engine_request(engine_target(fp), stream: true), listener)
      expect(result.status).to eq(:ok)
      expect(listener.chunks).to eq(chunks)
      expect(listener.events.last).to eq([:attempt, 1])
    end

    it "delivers the primary's deltas before the reset and the backup's after it" do
      primary.enqueue({ chunks: %w[p1 p2 p3 p4], cut_after: 2 })
      backup.enqueue({ chunks: %w[b1 b2] })
      listener = EngineHelpers::RecordingListener.new
      engine.run(engine_request([engine_target(primary), engine_target(backup)], stream: true), listener)
      kinds = listener.events.map { |e| e[0] == :chunk ? e[1] : e[0] }
      expect(kinds).to eq(["p1", "p2", :attempt, :reset, "b1", "b2", :attempt])
    end

    it "stops at a delta whose block raises, and the stored answer is failed, not finished" do
      fp.enqueue({ chunks: Array.new(20) { |i| "w#{i} " } })
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
      seen = []
      expect do
        chat.ask("Go") do |chunk|
          seen << chunk.content
          raise "enough" if seen.size == 3
        end
      end.to raise_error(RuntimeError, "enough")
      expect(seen).to eq(["w0 ", "w1 ", "w2 "])
      expect(chat.messages.last.status).to eq("failed")
      expect(chat.messages.last.content).to start_with("w0 w1 w2 ")
    end

    it "gives each Chunk its own index and the call's model, provider and request id" do
      fp.enqueue({ chunks: %w[a b c] })
      chunks = []
      reply = LlmFailover.chat(model: "gpt-4o", provider: :openai).ask("Go") { |c| chunks << c }
      expect(chunks.map(&:index)).to eq([0, 1, 2])
      expect(chunks.map { |c| [c.model, c.provider, c.request_id, c.reset?] }.uniq)
        .to eq([["gpt-4o", :openai, reply.request_id, false]])
      expect(chunks).to all(be_frozen)
      expect(chunks.first.inspect).to include('"a"', "openai/gpt-4o", "#0")
    end
  end

  describe "attempts handed to the listener" do
    it "come as one Engine::Attempt per attempt, with the timeout's phase as a Symbol" do
      fp.enqueue({ status: 503 }, { delay_headers: 3 })
      listener = EngineHelpers::RecordingListener.new
      target = engine_target(fp)
      result = LlmFailover::Engine.new.run(engine_request(target, max_retries: 1, retry_interval: 0,
                                                                  request_timeout: 0.3), listener)
      expect(listener.attempts).to all(be_a(LlmFailover::Engine::Attempt))
      expect(listener.attempts.map { |a| [a.target, a.error_class, a.phase, a.reached] })
        .to eq([[target, LlmFailover::ServiceUnavailableError, nil, true], [target, LlmFailover::TimeoutError, :total, true]])
      expect(result).to have_attributes(status: :failed, error_class: LlmFailover::TimeoutError, phase: :total,
                                        target: target)
    end
  end

  describe "the usage log's sinks" do
    it "are wrapped once per configuration and again after usage_log= or logger=" do
      config = LlmFailover::Configuration.new
      seen = []
      config.usage_log = ->(r) { seen << [:first, r] }
      first = config.usage_log_emitter
      expect(config.usage_log_emitter).to equal(first)
      copy = config.with_overrides({})
      expect(copy.usage_log_emitter).to equal(first)
      copy.usage_log = ->(r) { seen << [:second, r] }
      expect(copy.usage_log_emitter).not_to equal(first)
      x, y = %w[x y].map do |id|
        LlmFailover::AttemptRecord.new(request_id: id, attempt: 1, provider: :openai, model: "gpt-4o", success: true)
      end
      copy.usage_log_emitter.emit(x)
      config.usage_log_emitter.emit(y)
      expect(seen).to eq([[:second, x], [:first, y]])
      logger = Logger.new(StringIO.new)
      config.logger = logger
      expect(config.usage_log_emitter).not_to equal(first)
      expect(config.usage_log_emitter.logger).to equal(logger)
    end

    it "follow a chat's own usage_log override" do
      records = []
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai, usage_log: ->(r) { records << r })
      chat.ask("Hi")
      expect(records.map(&:success?)).to eq([true])
    end
  end

  describe "the listener's methods" do
    it "are checked on every call" do
      engine = LlmFailover::Engine.new
      request = engine_request(engine_target(fp))
      expect(engine.run(request, EngineHelpers::RecordingListener.new).status).to eq(:ok)
      expect { engine.run(request, Object.new) }.to raise_error(ArgumentError, /listener must respond/)
      half = Class.new { def on_chunk(*) = nil }.new
      expect { engine.run(request, half) }.to raise_error(ArgumentError, /listener must respond/)
      expect(engine.run(request, EngineHelpers::RecordingListener.new).status).to eq(:ok)
    end
  end

  describe "what calls to one model share" do
    it "is one frozen Target and engine target per provider and model, right for each model" do
      config = LlmFailover.configuration.provider_config(:openai)
      chats = %w[gpt-4o gpt-4o-mini gpt-4o].map { |m| LlmFailover.chat(model: m, provider: :openai) }
      targets = chats.map { |c| c.send(:engine_targets) }
      expect(targets[0][0]).to equal(targets[2][0])
      expect(targets.map { |t| t.map(&:model) }).to eq([["gpt-4o"], ["gpt-4o-mini"], ["gpt-4o"]])
      expect(targets.flatten).to all(be_frozen)
      expect(config.engine_target("gpt-4o")).to be_frozen.and have_attributes(model: "gpt-4o", api: :openai,
                                                                               key: "openai:gpt-4o")
      # Past the handful kept, entries are made again, still right.
      40.times { |i| expect(config.engine_target("m#{i}").model).to eq("m#{i}") }
      expect(config.target("gpt-4o").model).to eq("gpt-4o")
      fp.enqueue({ text: "from mini" })
      expect(chats[1].ask("Hi").content).to eq("from mini")
      expect(fp.requests.last.json["model"]).to eq("gpt-4o-mini")
    end

    it "keeps a chat with a backup on its own two targets" do
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai, backup_model: "claude", backup_provider: :anthropic)
      expect(chat.send(:engine_targets).map { |t| [t.name, t.model] }).to eq([[:openai, "gpt-4o"], [:anthropic, "claude"]])
      chat.with_model("gpt-4o-mini")
      expect(chat.send(:engine_targets).map(&:model)).to eq(%w[gpt-4o-mini claude])
      chat.with_model("gpt-4o", backup_model: nil, backup_provider: nil)
      expect(chat.send(:engine_targets).map(&:model)).to eq(%w[gpt-4o])
    end
  end

  describe "a chat without a quota" do
    it "never asks quota_used (0 and nil mean unlimited)" do
      asked = 0
      [0, nil].each do |quota|
        chat = LlmFailover.chat(model: "gpt-4o", provider: :openai, quota: quota, quota_used: -> { asked += 1 })
        expect(chat.ask("Hi").content).to be_a(String)
      end
      expect(asked).to eq(0)
    end
  end
end
