# frozen_string_literal: true

require "spec_helper"
require "support/engine_helpers"
require "timeout"
require "rbconfig"

RSpec.describe LlmFailover::Engine do
  let(:engine) { described_class.new }
  let(:fp) { start_fake_provider }

  it "answers a plain call and a streamed call over one reused connection" do
    listener = EngineHelpers::RecordingListener.new
    plain = engine.run(engine_request(engine_target(fp)), listener)
    streamed = engine.run(engine_request(engine_target(fp), stream: true), listener)

    expect(plain).to have_attributes(status: :ok, content: "Hello from FakeProvider", model: "gpt-4o")
    expect(plain.target).to equal(listener.attempts.first.target) # the request's Engine::Target
    expect(streamed[:content]).to eq("Hello from FakeProvider")
    expect(listener.chunks.join).to eq("Hello from FakeProvider")
    expect(listener.attempts.map(&:success)).to eq([true, true])
    expect(engine.idle_connections).to eq(1)
    expect(fp.connection_count).to eq(1) if fp.respond_to?(:connection_count)
  end

  it "sends the key in the provider's header and nowhere else" do
    engine.run(engine_request(engine_target(fp)), EngineHelpers::RecordingListener.new)
    engine.run(engine_request(engine_target(fp, api: :anthropic, model: "claude")), EngineHelpers::RecordingListener.new)
    openai, anthropic = fp.requests
    expect(openai.headers["authorization"]).to eq("Bearer sk-test-SECRET123")
    expect(anthropic.headers["x-api-key"]).to eq("sk-test-SECRET123")
    expect(anthropic.headers["anthropic-version"]).to eq("2023-06-01")
    expect(anthropic.headers).not_to have_key("authorization")
    expect(openai.body + anthropic.body).not_to include("SECRET123")
  end

  it "reports connection refused as ConnectionRefusedError without failing over" do
    port = TCPServer.open("127.0.0.1", 0) { |s| s.addr[1] } # closed again: nobody listens
    dead = LlmFailover::Engine::Target.new(key: "openai:m", api: :openai, base_url: "http://127.0.0.1:#{port}/v1",
                                           api_key: "k", model: "m")
    listener = EngineHelpers::RecordingListener.new
    result = engine.run(engine_request([dead, engine_target(fp)]), listener)
    expect(result).to have_attributes(status: :failed, error_class: LlmFailover::ConnectionRefusedError, target: dead,
                                      attempts: 1)
    expect(listener.attempts.map(&:reached)).to eq([false]) # never reached the provider
    expect(fp.request_count).to eq(0)
  end

  it "caps the response size" do
    fp.enqueue({ raw: JSON.generate(choices: [{ message: { content: "x" * 10_000 } }]) })
    result = engine.run(engine_request(engine_target(fp), max_response_bytes: 1000), EngineHelpers::RecordingListener.new)
    expect(result).to have_attributes(status: :failed, error_class: LlmFailover::InvalidResponseError)
    expect(result[:message]).to include("exceeded 1000 bytes")
  end

  describe "bad input from a provider" do
    let(:listener) { EngineHelpers::RecordingListener.new }

    it "delivers valid UTF-8, replacing invalid bytes in a plain answer" do
      body = "{\"model\":\"m\",\"choices\":[{\"message\":{\"content\":\"caf\xC3\xA9 \xFF ok\"}}]}".b
      fp.enqueue({ raw: body })
      result = engine.run(engine_request(engine_target(fp)), listener)
      expect(result[:content]).to eq("caf\u00e9 \uFFFD ok")
      expect(result[:content]).to be_valid_encoding
    end

    it "delivers valid UTF-8, replacing invalid bytes in a stream" do
      stream = (+%(data: {"choices":[{"delta":{"content":"a\xFEb"}}]}\n\n) +
                %(data: {"choices":[{"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n)).b
      fp.enqueue({ raw: stream, content_type: "text/event-stream" })
      result = engine.run(engine_request(engine_target(fp), stream: true), listener)
      expect(result).to have_attributes(status: :ok, content: "a\uFFFDb")
      expect(listener.chunks).to eq(["a\uFFFDb"])
    end

    it "ignores unknown event types and comments" do
      stream = %(: keep-alive\n\nevent: surprise\ndata: {"type":"surprise"}\n\n) +
               %(data: {"choices":[{"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n)
      fp.enqueue({ raw: stream, content_type: "text/event-stream" })
      expect(engine.run(engine_request(engine_target(fp), stream: true), listener)).to have_attributes(status: :ok, content: "hi")
    end

    it "calls an empty 200 an InvalidResponseError" do
      fp.enqueue({ raw: "" })
      expect(engine.run(engine_request(engine_target(fp)), listener))
        .to have_attributes(status: :failed, error_class: LlmFailover::InvalidResponseError, retryable: true)
    end

    it "calls a 200 that is not the protocol an InvalidResponseError" do
      fp.enqueue({ raw: "<html>maintenance</html>", content_type: "text/html" })
      result = engine.run(engine_request(engine_target(fp)), listener)
      expect(result).to have_attributes(status: :failed, error_class: LlmFailover::InvalidResponseError)
      expect(result[:message]).to include("not the OpenAI chat completions protocol")
    end

    it "takes a stream with a finish reason and usage but no [DONE] as complete" do
      fp.enqueue({ text: "all here", no_done: true })
      expect(engine.run(engine_request(engine_target(fp), stream: true), listener)).to have_attributes(status: :ok, content: "all here")
      expect(listener.attempts.size).to eq(1)
    end

    it "calls a stream without its terminal event a StreamInterruptedError" do
      fp.enqueue({ text: "not all here", no_terminal: true })
      expect(engine.run(engine_request(engine_target(fp), stream: true), listener))
        .to have_attributes(status: :failed, error_class: LlmFailover::StreamInterruptedError, partial_content: "not all here")
    end
  end

  it "re-raises an exception from the listener after tearing the transfer down" do
    fp.enqueue({ text: "one two three four", chunk_delay: 0.01 })
    listener = EngineHelpers::RecordingListener.new { |_| raise ArgumentError, "consumer broke" }
    expect { engine.run(engine_request(engine_target(fp), stream: true), listener) }
      .to raise_error(ArgumentError, "consumer broke")
    expect(listener.chunks).to eq(["one "])
    # The engine is still usable afterwards.
    expect(engine.run(engine_request(engine_target(fp)), EngineHelpers::RecordingListener.new).status).to eq(:ok)
  end

  it "lets a throw from the listener leave the call" do
    fp.enqueue({ text: "one two three", chunk_delay: 0.01 })
    seen = []
    listener = EngineHelpers::RecordingListener.new do |t|
      seen << t
      throw :enough
    end
    catch(:enough) { engine.run(engine_request(engine_target(fp), stream: true), listener) }
    expect(seen).to eq(["one "])
  end

  describe "interrupts" do
    it "ends a call waiting on a silent provider when the thread is killed" do
      fp.enqueue({ delay_headers: 30 })
      thread = Thread.new { engine.run(engine_request(engine_target(fp), request_timeout: 60), EngineHelpers::RecordingListener.new) }
      wait_for { fp.request_count == 1 }
      thread.kill
      expect(thread.join(5)).to eq(thread)
      expect(thread.status).to be(false)
    end

    it "ends a call on Timeout.timeout" do
      fp.enqueue({ text: "a b c", stall_after: 1 })
      expect do
        Timeout.timeout(0.3) do
          engine.run(engine_request(engine_target(fp), stream: true, idle_timeout: 60, request_timeout: 60),
                     EngineHelpers::RecordingListener.new)
        end
      end.to raise_error(Timeout::Error)
    end

    it "ends a call sleeping between retries on Thread#raise" do
      fp.enqueue({ error: :rate_limit, retry_after: 20 })
      thread = Thread.new do
        engine.run(engine_request(engine_target(fp), max_retries: 2, retry_max_interval: 30),
                   EngineHelpers::RecordingListener.new)
      rescue RuntimeError => e
        e
      end
      wait_for { fp.request_count == 1 }
      sleep 0.05
      thread.raise(RuntimeError, "stop")
      expect(thread.join(5).value.message).to eq("stop")
    end

    it "ends a call on SIGINT in a plain Ruby process" do
      fp.enqueue({ delay_headers: 30 })
      script = <<~RUBY
        require "llm_failover"
        e = LlmFailover::Engine.new
        target = LlmFailover::Engine::Target.new(key: "openai:m", api: :openai,
                                                 base_url: #{fp.base_url(:openai).inspect}, api_key: "k", model: "m")
        policy = LlmFailover::Engine::Policy.new(max_retries: 0, retry_interval: 0.1, retry_backoff_factor: 2,
                                                 retry_max_interval: 1, retry_interval_randomness: 0,
                                                 connect_timeout: 5, first_token_timeout: 60, idle_timeout: 60,
                                                 request_timeout: 60, failover_on_context_length: false,
                                                 max_response_bytes: 1_000_000)
        req = LlmFailover::Engine::Request.new(targets: [target], messages: [["user", "hi"]], policy: policy)
        l = Object.new
        def l.on_chunk(*) = nil
        def l.on_reset(_) = nil
        def l.on_attempt(_) = nil
        begin
          e.run(req, l)
          exit 3
        rescue Interrupt
          exit 42
        end
      RUBY
      pid = Process.spawn({ "RUBYLIB" => $LOAD_PATH.join(File::PATH_SEPARATOR) }, RbConfig.ruby, "-e", script)
      # A child Ruby's start: long on a loaded machine, longer with the sanitizer runtimes
      # preloaded (rake sanitize). The limits only keep a hang from stopping the suite.
      wait_for(limit: SpecTime.scaled(60)) { fp.request_count == 1 }
      Process.kill("INT", pid)
      _, status = Timeout.timeout(SpecTime.scaled(60)) { Process.wait2(pid) }
      expect(status.exitstatus).to eq(42)
    end
  end

  it "never hands a forked child the parent's connections" do
    expect(engine.run(engine_request(engine_target(fp)), EngineHelpers::RecordingListener.new).status).to eq(:ok)
    expect(engine.idle_connections).to eq(1)
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      idle_before = engine.idle_connections
      ok = engine.run(engine_request(engine_target(fp)), EngineHelpers::RecordingListener.new).status == :ok
      writer.write(JSON.generate(idle_before: idle_before, ok: ok))
      writer.close
      exit!(0)
    end
    writer.close
    child = JSON.parse(reader.read)
    Process.wait(pid)
    expect(child).to eq("idle_before" => 0, "ok" => true)
    expect(engine.run(engine_request(engine_target(fp)), EngineHelpers::RecordingListener.new).status).to eq(:ok)
  end

  it "survives GC compaction between and during calls" do
    skip "GC.compact is not supported here" unless GC.respond_to?(:verify_compaction_references)
    parser = LlmFailover::SSEParser.new
    SpecGC.compact_everything
    listener = EngineHelpers::RecordingListener.new { |_| GC.compact }
    fp.enqueue({ text: "alpha beta gamma" })
    result = engine.run(engine_request(engine_target(fp), stream: true), listener)
    SpecGC.compact_everything
    expect(result[:content]).to eq("alpha beta gamma")
    expect(parser.feed("data: x\n\n")).to eq([["", "x"]])
  end

  it "validates its request before any network" do
    expect { engine.run(engine_request([]), EngineHelpers::RecordingListener.new) }.to raise_error(ArgumentError, /targets/)
    bad = engine_target(fp).dup.tap { |t| t.api = :cohere }
    expect { engine.run(engine_request(bad), EngineHelpers::RecordingListener.new) }.to raise_error(ArgumentError, /api/)
    expect { engine.run(engine_request(engine_target(fp)), Object.new) }.to raise_error(ArgumentError, /listener/)
    expect(fp.request_count).to eq(0)
  end

  it "loads the error classes it maps to by itself, whatever was required first" do
    require "open3"
    lib = File.expand_path("../../lib", __dir__)
    out, status = Open3.capture2e(RbConfig.ruby, "-I", lib, "-e", <<~RUBY)
      require "llm_failover/llm_failover"
      puts LlmFailover::TimeoutError.ancestors.include?(LlmFailover::Error)
      puts LlmFailover::Engine.uuid.size
    RUBY
    expect(status).to be_success, out
    expect(out.split).to eq(%w[true 36])
  end
end
