# frozen_string_literal: true

$LOAD_PATH.unshift File.expand_path("../../../lib", __dir__)
require "llm_failover/testing"
require "json"
require "net/http"
require "socket"
require "stringio"

# Talks to the FakeProvider with plain Ruby only (Net::HTTP and raw sockets), so these specs
# neither need nor exercise the compiled extension.
module FakeProviderSpecSupport
  FIXTURES = File.expand_path("../../fixtures/recorded", __dir__)

  # A raw HTTP/1.1 client over one TCP connection, with its own read buffer so that
  # "nothing arrived" can be checked with IO.select without Ruby's IO buffer hiding bytes.
  class Conn
    Response = Struct.new(:status, :headers, :chunks, :body, :complete)

    attr_reader :sock

    def initialize(port)
      @sock = TCPSocket.new("127.0.0.1", port)
      @buf = +"".b
    end

    def post(path, body, headers: {})
      body = JSON.generate(body) unless body.is_a?(String)
      send_raw("POST", path, body, headers)
    end

    def send_raw(method, path, body, headers = {})
      head = +"#{method} #{path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      headers.each { |k, v| head << "#{k}: #{v}\r\n" }
      head << "Content-Length: #{body.bytesize}\r\n" unless headers.key?("Transfer-Encoding")
      @sock.write(head << "\r\n" << body)
    end

    # @return [Array(Integer, Hash)] status and headers (lowercase names)
    def read_head
      status = nil
      loop do
        line = read_line
        raise EOFError, "connection closed before a status line" if line.nil?

        status = Integer(line.split(" ")[1])
        break unless status == 100

        read_line # the empty line after 100 Continue
      end
      headers = {}
      while (line = read_line) && !line.empty?
        name, value = line.split(":", 2)
        headers[name.downcase] = value.strip
      end
      [status, headers]
    end

    # @return [String, nil] the next chunk's payload; nil for the zero-length last chunk
    def read_chunk
      size_line = read_line
      raise EOFError, "connection closed between chunks" if size_line.nil?

      size = Integer(size_line, 16)
      if size.zero?
        read_line
        return nil
      end
      data = read_exact(size)
      raise "chunk not followed by CRLF" unless read_line == ""

      data
    end

    # Reads a whole response. With chunked framing, a connection that closes before the
    # last chunk gives complete == false instead of an error.
    def read_response
      status, headers = read_head
      if headers["transfer-encoding"] == "chunked"
        chunks = []
        complete = false
        begin
          while (chunk = read_chunk)
            chunks << chunk
          end
          complete = true
        rescue EOFError, Errno::ECONNRESET
          complete = false
        end
        Response.new(status, headers, chunks, chunks.join, complete)
      else
        body = read_exact(Integer(headers.fetch("content-length")))
        Response.new(status, headers, nil, body, true)
      end
    end

    # @return [Boolean] true when no byte arrives within the timeout
    def silent?(timeout)
      @buf.empty? && IO.select([@sock], nil, nil, timeout).nil?
    end

    # @return [Boolean] true when the server closed (FIN or RST) within the timeout
    def closed_within?(timeout)
      return false unless @buf.empty?
      return false unless IO.select([@sock], nil, nil, timeout)

      @sock.read_nonblock(1, exception: false).nil?
    rescue Errno::ECONNRESET
      true
    end

    def close
      @sock.close unless @sock.closed?
    end

    private

    def read_line
      until (idx = @buf.index("\n"))
        return nil unless fill
      end
      @buf.slice!(0, idx + 1).chomp
    end

    def read_exact(n)
      while @buf.bytesize < n
        raise EOFError, "connection closed inside a body" unless fill
      end
      @buf.slice!(0, n)
    end

    def fill
      ready = IO.select([@sock], nil, nil, 10)
      raise "no answer from FakeProvider within 10 s" unless ready

      data = @sock.read_nonblock(65_536, exception: false)
      return false if data.nil?

      @buf << data unless data == :wait_readable
      true
    end
  end

  SseEvent = Struct.new(:event, :data) do
    def json
      JSON.parse(data)
    end
  end

  # Parses Server-Sent Events: blank-line separated blocks of "event:" and "data:" lines.
  def parse_sse(text)
    text.split(/\r?\n\r?\n/).reject(&:empty?).map do |block|
      event = nil
      data = []
      block.each_line(chomp: true) do |line|
        next if line.start_with?(":")

        field, value = line.split(":", 2)
        value = value.to_s.delete_prefix(" ")
        event = value if field == "event"
        data << value if field == "data"
      end
      SseEvent.new(event, data.join("\n"))
    end
  end

  # Every HTTP chunk must carry exactly one complete event.
  def events_of(response)
    response.chunks.map do |chunk|
      expect(chunk).to end_with("\n\n")
      events = parse_sse(chunk)
      expect(events.size).to eq(1), "chunk #{chunk.inspect} holds #{events.size} events"
      events.first
    end
  end

  def openai_body(**extra)
    { model: "gpt-4o-mini", messages: [{ role: "user", content: "Hi" }] }.merge(extra)
  end

  def anthropic_body(**extra)
    { model: "claude-haiku-4-5", max_tokens: 100, messages: [{ role: "user", content: "Hi" }] }.merge(extra)
  end

  def connect
    conns << Conn.new(fp.port)
    conns.last
  end

  def http
    Net::HTTP.start("127.0.0.1", fp.port) { |h| yield h }
  end

  def post_json(http, path, body)
    http.post(path, JSON.generate(body), "Content-Type" => "application/json")
  end

  def openai_stream_contents(events)
    events.reject { |e| e.data == "[DONE]" }.map(&:json)
          .flat_map { |c| c["choices"] }.filter_map { |ch| ch["delta"]["content"] }
  end

  def fixture_path(name)
    File.join(FIXTURES, name)
  end

  # Waits (bounded) for the server to notice that its clients are gone.
  def wait_for_no_connections
    50.times do
      return if fp.connection_count.zero?

      sleep 0.05
    end
  end
end

RSpec.describe LlmFailover::Testing::FakeProvider, :ruby_only do
  include FakeProviderSpecSupport

  let(:fp) { described_class.start }
  let(:conns) { [] }

  after do
    conns.each(&:close)
    fp.stop
  end

  describe "lifecycle" do
    it "listens on loopback and builds per-API base URLs" do
      expect(fp.url).to match(%r{\Ahttp://127\.0\.0\.1:\d+\z})
      expect(fp.port).to be > 0
      expect(fp.base_url(:openai)).to eq("#{fp.url}/v1")
      expect(fp.base_url(:anthropic)).to eq(fp.url)
      expect { fp.base_url(:cohere) }.to raise_error(ArgumentError)
    end

    it "has a short inspect with url, queue length and request count" do
      fp.enqueue({ text: "a" }, { text: "b" })
      http { |h| post_json(h, "/v1/chat/completions", openai_body) }
      expect(fp.inspect).to eq("#<LlmFailover::Testing::FakeProvider #{fp.url} queued=1 requests=1>")
    end

    it "stops after the block with .open, idempotently, and refuses connections afterwards" do
      port = nil
      value = described_class.open do |server|
        port = server.port
        http_status = Net::HTTP.start("127.0.0.1", port) { |h| post_json(h, "/v1/messages", anthropic_body) }.code
        expect(http_status).to eq("200")
        :done
      end
      expect(value).to eq(:done)
      expect { TCPSocket.new("127.0.0.1", port).close }.to raise_error(Errno::ECONNREFUSED)
      fp.stop
      expect { fp.stop }.not_to raise_error
      expect(fp.running?).to be(false)
    end
  end

  describe "forced tool calls" do
    let(:args) { { "city" => "Paris", "days" => [1, 2] } }
    let(:anthropic_tools) do
      { tools: [{ name: "answer", input_schema: { type: "object" } }], tool_choice: { type: "tool", name: "answer" } }
    end
    let(:openai_tools) do
      { tools: [{ type: "function", function: { name: "lookup", parameters: { type: "object" } } }],
        tool_choice: { type: "function", function: { name: "lookup" } } }
    end

    it "answers Anthropic with a tool_use block whose input is the arguments, unstreamed" do
      fp.enqueue({ tool_call: args, usage: { input: 4, output: 9 } })
      doc = JSON.parse(http { |h| post_json(h, "/v1/messages", anthropic_body(**anthropic_tools)) }.body)
      expect(doc["content"].size).to eq(1)
      expect(doc["content"][0]).to include("type" => "tool_use", "name" => "answer", "input" => args)
      expect(doc["content"][0]["id"]).to start_with("toolu_")
      expect(doc["stop_reason"]).to eq("tool_use")
      expect(doc["usage"]).to eq("input_tokens" => 4, "output_tokens" => 9)
    end

    it "streams Anthropic input_json_delta pieces that join into the arguments" do
      fp.enqueue({ tool_call: args })
      conn = connect
      conn.post("/v1/messages", anthropic_body(stream: true, **anthropic_tools))
      events = events_of(conn.read_response)
      start = events.find { |e| e.event == "content_block_start" }.json
      expect(start["content_block"]).to include("type" => "tool_use", "name" => "answer", "input" => {})
      deltas = events.select { |e| e.event == "content_block_delta" }.map { |e| e.json["delta"] }
      expect(deltas.size).to be > 1
      expect(deltas.map { |d| d["type"] }.uniq).to eq(["input_json_delta"])
      expect(JSON.parse(deltas.map { |d| d["partial_json"] }.join)).to eq(args)
      expect(events.find { |e| e.event == "message_delta" }.json["delta"]["stop_reason"]).to eq("tool_use")
      expect(events.map(&:event).last).to eq("message_stop")
    end

    it "answers OpenAI with tool_calls, unstreamed and streamed, naming the forced function" do
      fp.enqueue({ tool_call: args }, { tool_call: args, chunks: ['{"city":', '"Paris","days":[1,2]}'] })
      doc = JSON.parse(http { |h| post_json(h, "/v1/chat/completions", openai_body(**openai_tools)) }.body)
      choice = doc["choices"][0]
      expect(choice["finish_reason"]).to eq("tool_calls")
      expect(choice["message"]["content"]).to be_nil
      call = choice["message"]["tool_calls"][0]
      expect(call).to include("type" => "function")
      expect(call["function"]["name"]).to eq("lookup")
      expect(JSON.parse(call["function"]["arguments"])).to eq(args)

      conn = connect
      conn.post("/v1/chat/completions", openai_body(stream: true, **openai_tools))
      events = events_of(conn.read_response)
      chunks = events.reject { |e| e.data == "[DONE]" }.map(&:json)
      calls = chunks.flat_map { |c| c["choices"] }.filter_map { |ch| ch["delta"]["tool_calls"] }.flatten
      # The call opens with its id, name and empty arguments, as the recordings show.
      expect(calls.map { |c| c["function"]["arguments"] }).to eq(["", '{"city":', '"Paris","days":[1,2]}'])
      expect(calls.first).to include("id" => start_with("call_"), "type" => "function")
      expect(calls.first["function"]["name"]).to eq("lookup")
      expect(calls.drop(1).map { |c| c["function"].key?("name") }).to eq([false, false])
      expect(chunks.flat_map { |c| c["choices"] }.map { |ch| ch["finish_reason"] }.compact).to eq(["tool_calls"])
    end

    it "sends tool_call: arguments given as a String verbatim, and applies stream faults to them" do
      fp.enqueue({ tool_call: '{"city": "Par', tool_name: "other" }, { tool_call: args, cut_after: 2 })
      doc = JSON.parse(http { |h| post_json(h, "/v1/messages", anthropic_body(**anthropic_tools)) }.body)
      expect(doc["content"][0]).to include("name" => "other", "input" => '{"city": "Par')
      conn = connect
      conn.post("/v1/messages", anthropic_body(stream: true, **anthropic_tools))
      res = conn.read_response
      expect(res.complete).to be(false)
      expect(events_of(res).count { |e| e.event == "content_block_delta" }).to eq(2)
    end

    it "answers a json: step as the request asks: a forced tool call, or JSON text" do
      fp.enqueue({ json: args }, { json: args })
      doc = JSON.parse(http { |h| post_json(h, "/v1/messages", anthropic_body(**anthropic_tools)) }.body)
      expect(doc["content"][0]).to include("type" => "tool_use", "input" => args)
      doc = JSON.parse(http { |h| post_json(h, "/v1/chat/completions", openai_body) }.body)
      expect(JSON.parse(doc["choices"][0]["message"]["content"])).to eq(args)
      expect(doc["choices"][0]["finish_reason"]).to eq("stop")
    end

    it "refuses a step with two answers" do
      expect { fp.enqueue({ text: "a", tool_call: {} }) }.to raise_error(ArgumentError, /one of text, tool_call, json/)
      expect { fp.enqueue({ tool_call: 5 }) }.to raise_error(ArgumentError, /tool_call/)
    end
  end

  describe "healthy OpenAI answers" do
    it "answers a plain request with a chat.completion JSON body and Content-Length" do
      fp.enqueue({ text: "Hi there", usage: { input: 7, output: 2 }, headers: { "x-request-id" => "req_1" } })
      res = http { |h| post_json(h, "/v1/chat/completions", openai_body) }
      expect(res.code).to eq("200")
      expect(res["content-type"]).to eq("application/json")
      expect(res["content-length"]).to eq(res.body.bytesize.to_s)
      expect(res["x-request-id"]).to eq("req_1")
      doc = JSON.parse(res.body)
      expect(doc["object"]).to eq("chat.completion")
      expect(doc["model"]).to eq("gpt-4o-mini")
      expect(doc["choices"][0]["message"]).to include("role" => "assistant", "content" => "Hi there")
      expect(doc["choices"][0]["finish_reason"]).to eq("stop")
      expect(doc["usage"]).to eq("prompt_tokens" => 7, "completion_tokens" => 2, "total_tokens" => 9)
    end

    it "streams deltas, a finish_reason chunk, a usage chunk and [DONE], one event per HTTP chunk" do
      fp.enqueue({ text: "one two  three" })
      conn = connect
      conn.post("/v1/chat/completions", openai_body(stream: true, stream_options: { include_usage: true }))
      res = conn.read_response
      expect(res.status).to eq(200)
      expect(res.headers).to include("content-type" => "text/event-stream", "transfer-encoding" => "chunked")
      expect(res.complete).to be(true)

      events = events_of(res)
      expect(events.last.data).to eq("[DONE]")
      chunks = events[0..-2].map(&:json)
      deltas = chunks[0..2]
      expect(deltas.map { |c| c["choices"][0]["delta"]["content"] }).to eq(["one ", "two  ", "three"])
      expect(deltas.map { |c| c["choices"][0]["finish_reason"] }).to eq([nil, nil, nil])
      expect(deltas.first["choices"][0]["delta"]["role"]).to eq("assistant")
      expect(chunks.map { |c| c["object"] }.uniq).to eq(["chat.completion.chunk"])
      expect(chunks.map { |c| c["model"] }.uniq).to eq(["gpt-4o-mini"])
      expect(chunks[3]["choices"][0]).to include("delta" => {}, "finish_reason" => "stop")
      expect(chunks[4]["choices"]).to eq([])
      expect(chunks[4]["usage"]).to include("prompt_tokens" => 10, "completion_tokens" => 3)
      expect(chunks.size).to eq(5)
    end

    it "sends no usage chunk when the request did not ask for usage" do
      conn = connect
      conn.post("/v1/chat/completions", openai_body(stream: true))
      events = events_of(conn.read_response)
      expect(events.map(&:data).last).to eq("[DONE]")
      chunks = events[0..-2].map(&:json)
      expect(chunks.last["choices"][0]["finish_reason"]).to eq("stop")
      expect(chunks.none? { |c| c["choices"].empty? }).to be(true)
      expect(openai_stream_contents(events).join).to eq("Hello from FakeProvider")
    end

    it "uses explicit chunks, model, usage and finish_reason" do
      fp.enqueue({ chunks: ["Hel", "lo", "!"], model: "gpt-4o-2024-08-06", finish_reason: "length",
                   usage: { input: 5 } })
      conn = connect
      conn.post("/v1/chat/completions", openai_body(stream: true, stream_options: { include_usage: true }))
      events = events_of(conn.read_response)
      expect(openai_stream_contents(events)).to eq(["Hel", "lo", "!"])
      chunks = events[0..-2].map(&:json)
      expect(chunks.map { |c| c["model"] }.uniq).to eq(["gpt-4o-2024-08-06"])
      expect(chunks[-2]["choices"][0]["finish_reason"]).to eq("length")
      expect(chunks[-1]["usage"]).to include("prompt_tokens" => 5, "completion_tokens" => 3)
    end
  end

  describe "healthy Anthropic answers" do
    it "answers a plain request with a message JSON body" do
      fp.enqueue({ text: "Bonjour", usage: { input: 4, output: 1 }, finish_reason: "max_tokens" })
      res = http { |h| post_json(h, "/v1/messages", anthropic_body) }
      expect(res.code).to eq("200")
      doc = JSON.parse(res.body)
      expect(doc).to include("type" => "message", "role" => "assistant", "model" => "claude-haiku-4-5",
                             "stop_reason" => "max_tokens")
      expect(doc["content"]).to eq([{ "type" => "text", "text" => "Bonjour" }])
      expect(doc["usage"]).to eq("input_tokens" => 4, "output_tokens" => 1)
    end

    it "streams message_start, content_block_start, ping, deltas, content_block_stop, message_delta, message_stop" do
      fp.enqueue({ text: "Hello big world" })
      conn = connect
      conn.post("/v1/messages", anthropic_body(stream: true))
      res = conn.read_response
      expect(res.headers["content-type"]).to eq("text/event-stream")
      expect(res.complete).to be(true)
      events = events_of(res)
      expect(events.map(&:event)).to eq(%w[message_start content_block_start ping
                                           content_block_delta content_block_delta content_block_delta
                                           content_block_stop message_delta message_stop])
      events.each { |e| expect(e.json["type"]).to eq(e.event) }
      expect(events[0].json["message"]).to include("model" => "claude-haiku-4-5", "role" => "assistant")
      expect(events[3..5].map { |e| e.json["delta"] }).to eq(
        [{ "type" => "text_delta", "text" => "Hello " }, { "type" => "text_delta", "text" => "big " },
         { "type" => "text_delta", "text" => "world" }]
      )
      expect(events[7].json["delta"]["stop_reason"]).to eq("end_turn")
      expect(events[7].json["usage"]).to include("input_tokens" => 10, "output_tokens" => 3)
    end
  end

  describe "rate limits (rate_limit)" do
    def post_to(path, body, headers = {})
      http { |h| h.post(path, JSON.generate(body), { "Content-Type" => "application/json" }.merge(headers)) }
    end

    it "says what is left in OpenAI's headers, counting down, and answers a 429 past the window" do
      fp.rate_limit(requests: 2, tokens: 10_000, per: 30)
      first = post_to("/v1/chat/completions", openai_body(max_tokens: 100))
      expect(first["x-ratelimit-limit-requests"]).to eq("2")
      expect(first["x-ratelimit-remaining-requests"]).to eq("1")
      expect(first["x-ratelimit-limit-tokens"]).to eq("10000")
      expect(Integer(first["x-ratelimit-remaining-tokens"])).to be_between(10_000 - 200, 10_000 - 100)
      expect(first["x-ratelimit-reset-requests"]).to match(/\A\d+(\.\d+)?s\z/)
      expect(post_to("/v1/chat/completions", openai_body)["x-ratelimit-remaining-requests"]).to eq("0")
      past = post_to("/v1/chat/completions", openai_body)
      expect(past.code).to eq("429")
      expect(JSON.parse(past.body).dig("error", "code")).to eq("rate_limit_exceeded")
      expect(Integer(past["retry-after"])).to be_between(1, 30)
      expect(fp.request_count).to eq(3)
    end

    it "speaks each host's own names: Anthropic's with RFC 3339 resets, Azure's counts alone, Gemini none" do
      fp.rate_limit(requests: 5, per: 60)
      anthropic = post_to("/v1/messages", anthropic_body)
      expect(anthropic["anthropic-ratelimit-requests-remaining"]).to eq("4")
      expect(Time.iso8601(anthropic["anthropic-ratelimit-requests-reset"])).to be_between(Time.now, Time.now + 61)
      expect(anthropic["x-ratelimit-remaining-requests"]).to be_nil
      azure = post_to("/openai/v1/chat/completions", openai_body, "api-key" => "azure-key")
      expect(azure["x-ratelimit-remaining-requests"]).to eq("3")
      expect(azure["x-ratelimit-reset-requests"]).to be_nil
      gemini = post_to("/v1beta/models/gemini-2.5-flash:generateContent", { contents: [{ parts: [{ text: "Hi" }] }] })
      expect(gemini.code).to eq("200")
      expect(gemini.to_hash.keys.grep(/ratelimit/)).to be_empty
    end

    it "keeps a lane's window its own, and reset drops them" do
      fp.on(:east).rate_limit(requests: 1, per: 60)
      expect(post_to("/providers/east/v1/chat/completions", openai_body).code).to eq("200")
      expect(post_to("/providers/east/v1/chat/completions", openai_body).code).to eq("429")
      expect(post_to("/v1/chat/completions", openai_body)["x-ratelimit-remaining-requests"]).to be_nil
      fp.reset
      expect(post_to("/providers/east/v1/chat/completions", openai_body).code).to eq("200")
      expect { fp.rate_limit(per: 60) }.to raise_error(ArgumentError, /needs requests: or tokens:/)
    end
  end

  describe "default step" do
    it "answers with the default when the queue is empty, and default= changes it" do
      expect(fp.default).to eq(text: "Hello from FakeProvider")
      first = http { |h| JSON.parse(post_json(h, "/v1/messages", anthropic_body).body) }
      expect(first["content"][0]["text"]).to eq("Hello from FakeProvider")

      fp.default = { text: "Changed" }
      expect(fp.default).to eq(text: "Changed")
      second = http { |h| JSON.parse(post_json(h, "/v1/chat/completions", openai_body).body) }
      expect(second["choices"][0]["message"]["content"]).to eq("Changed")
    end

    it "takes queued steps in order before falling back to the default" do
      fp.enqueue({ text: "first" }, { text: "second" })
      texts = http do |h|
        Array.new(3) { JSON.parse(post_json(h, "/v1/chat/completions", openai_body).body) }
      end.map { |d| d["choices"][0]["message"]["content"] }
      expect(texts).to eq(["first", "second", "Hello from FakeProvider"])
    end
  end

  describe "scripted responses" do
    it "sends status, body and headers exactly; a Hash body is JSON-encoded" do
      fp.enqueue({ status: 502, body: "<html>Bad gateway</html>", headers: { "Content-Type" => "text/html" } },
                 { status: 418, body: { "error" => { "message" => "teapot" } }, headers: { "x-custom" => "1" } })
      http do |h|
        res = post_json(h, "/v1/chat/completions", openai_body)
        expect([res.code, res["content-type"], res.body]).to eq(["502", "text/html", "<html>Bad gateway</html>"])
        res = post_json(h, "/v1/chat/completions", openai_body)
        expect(res.code).to eq("418")
        expect(res["x-custom"]).to eq("1")
        expect(JSON.parse(res.body)).to eq("error" => { "message" => "teapot" })
      end
    end

    it "sends raw bytes with the given status and content type" do
      fp.enqueue({ raw: "this is not json" }, { raw: "data: x\n\n", status: 201, content_type: "text/plain" })
      http do |h|
        res = post_json(h, "/v1/messages", anthropic_body)
        expect([res.code, res["content-type"], res.body]).to eq(["200", "application/json", "this is not json"])
        res = post_json(h, "/v1/messages", anthropic_body)
        expect([res.code, res["content-type"], res.body]).to eq(["201", "text/plain", "data: x\n\n"])
      end
    end
  end

  describe "canned errors" do
    expected = {
      rate_limit: [429, "rate_limit_exceeded", "rate_limit_error"],
      insufficient_quota: [429, "insufficient_quota", "insufficient_quota"],
      server: [500, nil, "api_error"],
      unavailable: [503, nil, "api_error"],
      overloaded: [529, "overloaded_error", "overloaded_error"],
      unauthorized: [401, "invalid_api_key", "authentication_error"],
      forbidden: [403, "model_not_allowed", "permission_error"],
      not_found: [404, "model_not_found", "not_found_error"],
      bad_request: [400, nil, "invalid_request_error"],
      context_length: [400, "context_length_exceeded", "invalid_request_error"],
      content_policy: [400, "content_policy_violation", "invalid_request_error"],
      payment_required: [402, 402, "billing_error"]
    }

    expected.each do |name, (status, openai_code, anthropic_type)|
      it "#{name}: #{status} in each provider's error shape" do
        fp.enqueue({ error: name }, { error: name })
        http do |h|
          res = post_json(h, "/v1/chat/completions", openai_body)
          expect(res.code).to eq(status.to_s)
          expect(res["content-type"]).to eq("application/json")
          error = JSON.parse(res.body).fetch("error")
          expect(error.keys).to include("message", "type", "code")
          expect(error["code"]).to eq(openai_code)
          expect(res["x-should-retry"]).to be_nil

          res = post_json(h, "/v1/messages", anthropic_body)
          expect(res.code).to eq(status.to_s)
          doc = JSON.parse(res.body)
          expect(doc["type"]).to eq("error")
          expect(doc["error"]["type"]).to eq(anthropic_type)
          expect(doc["error"]["message"]).to be_a(String)
          expect(res["x-should-retry"]).to eq([400, 401].include?(status) ? "false" : nil)
        end
      end
    end

    it "puts the provider's context-length wording in the message" do
      fp.enqueue({ error: :context_length })
      res = http { |h| post_json(h, "/v1/messages", anthropic_body) }
      expect(JSON.parse(res.body)["error"]["message"]).to eq("prompt is too long: 250000 tokens > 200000 maximum")
    end

    it "adds retry-after and retry-after-ms when asked" do
      fp.enqueue({ error: :rate_limit, retry_after: 7, retry_after_ms: 250 }, { error: :overloaded })
      http do |h|
        res = post_json(h, "/v1/chat/completions", openai_body)
        expect([res["retry-after"], res["retry-after-ms"]]).to eq(%w[7 250])
        res = post_json(h, "/v1/chat/completions", openai_body)
        expect([res["retry-after"], res["retry-after-ms"]]).to eq([nil, nil])
      end
    end
  end

  describe "stream faults" do
    it "cut_after: N sends N deltas, then closes without a terminal event or last chunk" do
      fp.enqueue({ text: "a b c d e", cut_after: 2 })
      conn = connect
      conn.post("/v1/chat/completions", openai_body(stream: true, stream_options: { include_usage: true }))
      res = conn.read_response
      expect(res.complete).to be(false)
      events = events_of(res)
      expect(openai_stream_contents(events)).to eq(["a ", "b "])
      expect(events.map(&:data)).not_to include("[DONE]")
      expect(events.map(&:json).map { |c| c["choices"][0]["finish_reason"] }).to eq([nil, nil])
    end

    it "cut_after: N on Anthropic stops after the preamble and N deltas" do
      fp.enqueue({ text: "a b c", cut_after: 1 })
      conn = connect
      conn.post("/v1/messages", anthropic_body(stream: true))
      res = conn.read_response
      expect(res.complete).to be(false)
      expect(events_of(res).map(&:event)).to eq(%w[message_start content_block_start ping content_block_delta])
    end

    it "stall_after: N sends N deltas, then keeps the socket open and silent" do
      fp.enqueue({ text: "a b c", stall_after: 1 })
      conn = connect
      conn.post("/v1/chat/completions", openai_body(stream: true))
      status, = conn.read_head
      expect(status).to eq(200)
      first = parse_sse(conn.read_chunk)
      expect(first.first.json["choices"][0]["delta"]["content"]).to eq("a ")
      expect(conn.silent?(0.3)).to be(true)
      expect(fp.connection_count).to eq(1)
    end

    it "stall_after: the server lets go of a stalled connection once the client leaves" do
      fp.enqueue({ text: "a b c", stall_after: 0 })
      conn = connect
      conn.post("/v1/messages", anthropic_body(stream: true))
      conn.read_head
      3.times { conn.read_chunk } # the preamble
      expect(conn.silent?(0.2)).to be(true)
      conn.close
      wait_for_no_connections
      expect(fp.connection_count).to eq(0)
    end

    it "malformed_after: N sends one broken event after N deltas, then carries on to the end" do
      fp.enqueue({ text: "a b c", malformed_after: 1 })
      conn = connect
      conn.post("/v1/chat/completions", openai_body(stream: true))
      res = conn.read_response
      expect(res.complete).to be(true)
      expect(res.chunks[1]).to eq(%(data: {"choices": [{"delta": {"content": "x"\n\n))
      events = parse_sse(res.body)
      expect { events[1].json }.to raise_error(JSON::ParserError)
      good = events.reject.with_index { |_, i| i == 1 }
      expect(openai_stream_contents(good)).to eq(["a ", "b ", "c"])
      expect(events.last.data).to eq("[DONE]")
    end

    it "malformed_after on Anthropic puts the broken data in a content_block_delta" do
      fp.enqueue({ text: "a b", malformed_after: 0 })
      conn = connect
      conn.post("/v1/messages", anthropic_body(stream: true))
      events = events_of(conn.read_response)
      expect(events.map(&:event)).to eq(%w[message_start content_block_start ping content_block_delta
                                           content_block_delta content_block_delta content_block_stop
                                           message_delta message_stop])
      expect(events[3].data).to eq('{"choices": [{"delta": {"content": "x"')
    end

    it "error_event_after: N sends an in-stream OpenAI error and ends the body cleanly" do
      fp.enqueue({ text: "a b c", error_event_after: 2 })
      conn = connect
      conn.post("/v1/chat/completions", openai_body(stream: true))
      res = conn.read_response
      expect(res.complete).to be(true)
      events = events_of(res)
      expect(openai_stream_contents(events[0..1])).to eq(["a ", "b "])
      expect(events.size).to eq(3)
      expect(events[2].json).to eq("error" => { "message" => "The server had an error while processing your request.",
                                                "type" => "server_error", "code" => nil })
      # The body ended properly, so the connection still serves the next request.
      conn.post("/v1/chat/completions", openai_body)
      expect(conn.read_response.status).to eq(200)
    end

    it "error_event_after: N sends Anthropic's event: error overloaded_error" do
      fp.enqueue({ text: "a b c", error_event_after: 1 })
      conn = connect
      conn.post("/v1/messages", anthropic_body(stream: true))
      res = conn.read_response
      expect(res.complete).to be(true)
      events = events_of(res)
      expect(events.map(&:event)).to eq(%w[message_start content_block_start ping content_block_delta error])
      expect(events.last.json).to eq("type" => "error",
                                     "error" => { "type" => "overloaded_error", "message" => "Overloaded" })
    end

    it "no_done: the finish_reason chunk carries usage; no usage-only chunk, no [DONE]" do
      fp.enqueue({ text: "a b", no_done: true, usage: { input: 3, output: 2 } })
      conn = connect
      conn.post("/v1/chat/completions", openai_body(stream: true, stream_options: { include_usage: true }))
      res = conn.read_response
      expect(res.complete).to be(true)
      chunks = events_of(res).map(&:json) # would raise on "[DONE]"
      expect(chunks.size).to eq(3)
      expect(chunks.last["choices"][0]["finish_reason"]).to eq("stop")
      expect(chunks.last["usage"]).to include("prompt_tokens" => 3, "completion_tokens" => 2)
    end

    it "no_terminal: the body ends cleanly without any terminal event (both APIs)" do
      fp.enqueue({ text: "a b", no_terminal: true }, { text: "a b", no_terminal: true })
      conn = connect
      conn.post("/v1/chat/completions", openai_body(stream: true, stream_options: { include_usage: true }))
      res = conn.read_response
      expect(res.complete).to be(true)
      chunks = events_of(res).map(&:json)
      expect(chunks.map { |c| c["choices"][0]["finish_reason"] }).to eq([nil, nil])

      conn.post("/v1/messages", anthropic_body(stream: true))
      res = conn.read_response
      expect(res.complete).to be(true)
      expect(events_of(res).map(&:event)).to eq(%w[message_start content_block_start ping content_block_delta
                                                   content_block_delta content_block_stop])
    end

    it "reset: the connection is reset (or closed) before any response byte" do
      fp.enqueue({ reset: true })
      conn = connect
      conn.post("/v1/chat/completions", openai_body(stream: true))
      expect(IO.select([conn.sock], nil, nil, 5)).not_to be_nil
      outcome = begin
        conn.sock.readpartial(1024)
      rescue Errno::ECONNRESET
        :reset
      rescue EOFError
        :eof
      end
      expect(outcome).to eq(:reset).or eq(:eof)
      expect(fp.request_count).to eq(1)
    end

    it "close: sends Connection: close and closes after the response" do
      fp.enqueue({ text: "bye", close: true })
      conn = connect
      conn.post("/v1/messages", anthropic_body)
      res = conn.read_response
      expect(res.headers["connection"]).to eq("close")
      expect(JSON.parse(res.body)["content"][0]["text"]).to eq("bye")
      expect(conn.closed_within?(5)).to be(true)
    end
  end

  describe "delays" do
    it "delay_headers holds back the status line" do
      fp.enqueue({ text: "late", delay_headers: 1.5 })
      conn = connect
      conn.post("/v1/chat/completions", openai_body)
      expect(conn.silent?(0.3)).to be(true)
      res = conn.read_response
      expect(res.status).to eq(200)
    end

    it "delay_first_token sends the headers (and Anthropic's preamble), then holds back the first delta" do
      fp.enqueue({ text: "a b", delay_first_token: 1.5 })
      conn = connect
      conn.post("/v1/messages", anthropic_body(stream: true))
      status, = conn.read_head
      expect(status).to eq(200)
      expect(3.times.map { parse_sse(conn.read_chunk).first.event }).to eq(%w[message_start content_block_start ping])
      expect(conn.silent?(0.3)).to be(true)
      delta = parse_sse(conn.read_chunk).first
      expect(delta.json["delta"]["text"]).to eq("a ")
    end

    it "chunk_delay holds back each following event" do
      fp.enqueue({ chunks: %w[a b], chunk_delay: 0.8 })
      conn = connect
      conn.post("/v1/chat/completions", openai_body(stream: true))
      conn.read_head
      conn.read_chunk
      expect(conn.silent?(0.2)).to be(true)
      expect(parse_sse(conn.read_chunk).first.json["choices"][0]["delta"]["content"]).to eq("b")
    end
  end

  describe "keep-alive" do
    it "serves two requests on one TCP connection" do
      fp.enqueue({ text: "one" }, { text: "two" })
      conn = connect
      conn.post("/v1/chat/completions", openai_body(stream: true))
      first = conn.read_response
      expect(first.headers["connection"]).to eq("keep-alive")
      expect(openai_stream_contents(events_of(first))).to eq(["one"])
      conn.post("/v1/messages", anthropic_body)
      second = conn.read_response
      expect(JSON.parse(second.body)["content"][0]["text"]).to eq("two")
      expect(fp.connection_count).to eq(1)
    end

    it "closes after the response when the client sends Connection: close" do
      conn = connect
      conn.post("/v1/messages", anthropic_body, headers: { "Connection" => "close" })
      expect(conn.read_response.headers["connection"]).to eq("close")
      expect(conn.closed_within?(5)).to be(true)
    end
  end

  describe "recorded fixtures" do
    it "serves a streamed fixture byte for byte, one HTTP chunk per event" do
      name = "chat_streaming_responses_anthropic_claude-haiku-4-5_supports_streaming_responses.json"
      recorded = JSON.parse(File.read(fixture_path(name)))["interactions"][0]["response"]
      fp.enqueue({ fixture: fixture_path(name) })
      conn = connect
      conn.post("/v1/messages", anthropic_body(stream: true))
      res = conn.read_response
      expect(res.status).to eq(recorded["status"])
      expect(res.headers["content-type"]).to eq(recorded["headers"]["content-type"])
      expect(res.headers["request-id"]).to eq(recorded["headers"]["request-id"])
      expect(res.headers["transfer-encoding"]).to eq("chunked")
      expect(res.complete).to be(true)
      expect(res.body).to eq(recorded["body"].b)
      expect(res.chunks.size).to eq(parse_sse(recorded["body"]).size)
      expect(res.chunks).to all(end_with("\n\n"))
    end

    it "serves a JSON fixture byte for byte with Content-Length" do
      name = "chat_basic_chat_functionality_anthropic_claude-haiku-4-5_can_have_a_basic_conversation.json"
      recorded = JSON.parse(File.read(fixture_path(name)))["interactions"][0]["response"]
      fp.enqueue({ fixture: fixture_path(name), interaction: 0 })
      res = http { |h| post_json(h, "/v1/messages", anthropic_body) }
      expect(res.code).to eq(recorded["status"].to_s)
      expect(res["content-length"]).to eq(recorded["body"].bytesize.to_s)
      expect(res.body.b).to eq(recorded["body"].b)
    end

    it "serves a recorded error with its status and headers from an already parsed Hash" do
      name = "chat_error_handling_with_anthropic_claude-haiku-4-5_raises_appropriate_auth_error.json"
      doc = JSON.parse(File.read(fixture_path(name)))
      fp.enqueue({ fixture: doc })
      res = http { |h| post_json(h, "/v1/messages", anthropic_body) }
      expect(res.code).to eq("401")
      expect(res["x-should-retry"]).to eq("false")
      expect(res.body).to eq(doc["interactions"][0]["response"]["body"])
    end
  end

  describe "request log" do
    it "records method, path, lowercase headers, body, parsed json, api and stream" do
      body = openai_body(stream: true)
      conn = connect
      conn.post("/v1/chat/completions", body, headers: { "Authorization" => "Bearer sk-test", "X-Trace" => "t1" })
      conn.read_response
      conn.post("/v1/messages", "not json")
      conn.read_response

      first, second = fp.requests
      expect(first).to be_a(LlmFailover::Testing::FakeProvider::Request)
      expect([first.method, first.path, first.api, first.stream]).to eq(["POST", "/v1/chat/completions", :openai, true])
      expect(first.headers).to include("authorization" => "Bearer sk-test", "x-trace" => "t1")
      expect(first.body).to eq(JSON.generate(body))
      expect(first.json).to eq(JSON.parse(JSON.generate(body)))
      expect([second.api, second.json, second.stream, second.body]).to eq([:anthropic, nil, false, "not json"])
      expect(fp.request_count).to eq(2)
    end

    it "logs unrouted requests, answers them 404 with a JSON body, and spends no step on them" do
      fp.enqueue({ text: "kept" })
      http do |h|
        res = h.get("/v1/models")
        expect(res.code).to eq("404")
        expect(JSON.parse(res.body)["error"]["message"]).to include("/v1/models")
        res = post_json(h, "/v1/moderations", openai_body)
        expect(res.code).to eq("404")
        # Embeddings are answered (deterministically) from a queue of their own.
        res = post_json(h, "/v1/embeddings", { "model" => "e", "input" => ["a b"] })
        expect(JSON.parse(res.body)["data"].size).to eq(1)
        res = post_json(h, "/v1/chat/completions", openai_body)
        expect(JSON.parse(res.body)["choices"][0]["message"]["content"]).to eq("kept")
      end
      expect(fp.requests.map { |r| [r.method, r.path, r.api] }).to eq(
        [["GET", "/v1/models", nil], ["POST", "/v1/moderations", nil], ["POST", "/v1/embeddings", :openai],
         ["POST", "/v1/chat/completions", :openai]]
      )
    end

    it "clear drops the queue and the log" do
      fp.enqueue({ text: "never" })
      http { |h| h.get("/") }
      fp.clear
      expect(fp.request_count).to eq(0)
      expect(fp.requests).to eq([])
      res = http { |h| post_json(h, "/v1/chat/completions", openai_body) }
      expect(JSON.parse(res.body)["choices"][0]["message"]["content"]).to eq("Hello from FakeProvider")
    end

    it "hands each step to exactly one of many concurrent requests" do
      texts = (1..8).map { |i| "answer #{i}" }
      fp.enqueue(*texts.map { |t| { text: t } })
      answers = Array.new(8) do
        Thread.new { http { |h| JSON.parse(post_json(h, "/v1/chat/completions", openai_body).body) } }
      end.map(&:value).map { |d| d["choices"][0]["message"]["content"] }
      expect(answers.sort).to eq(texts.sort)
      expect(fp.request_count).to eq(8)
    end
  end

  describe "request bodies" do
    it "reads a chunked request body" do
      json = JSON.generate(openai_body(stream: false))
      chunked = "#{json[0, 10].bytesize.to_s(16)}\r\n#{json[0, 10]}\r\n" \
                "#{json[10..].bytesize.to_s(16)};ext=1\r\n#{json[10..]}\r\n0\r\nx-trailer: 1\r\n\r\n"
      conn = connect
      conn.send_raw("POST", "/v1/chat/completions", chunked, "Transfer-Encoding" => "chunked")
      expect(conn.read_response.status).to eq(200)
      expect(fp.requests.last.body).to eq(json)
      expect(fp.requests.last.json["model"]).to eq("gpt-4o-mini")
    end

    it "answers Expect: 100-continue before reading the body" do
      json = JSON.generate(anthropic_body)
      conn = connect
      conn.sock.write("POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: #{json.bytesize}\r\n" \
                      "Expect: 100-continue\r\n\r\n")
      expect(IO.select([conn.sock], nil, nil, 5)).not_to be_nil
      expect(conn.sock.readpartial(100)).to eq("HTTP/1.1 100 Continue\r\n\r\n")
      conn.sock.write(json)
      expect(conn.read_response.status).to eq(200)
      expect(fp.requests.last.json["max_tokens"]).to eq(100)
    end

    it "answers a request that is not HTTP with a 400 and closes" do
      conn = connect
      conn.sock.write("HELLO\r\n\r\n")
      res = conn.read_response
      expect(res.status).to eq(400)
      expect(conn.closed_within?(5)).to be(true)
    end
  end

  describe "step validation" do
    it "raises ArgumentError naming an unknown key, and queues nothing" do
      expect { fp.enqueue({ text: "ok" }, { txet: "typo" }) }.to raise_error(ArgumentError, /txet/)
      expect(fp.queue_size).to eq(0)
      expect { fp.default = { stall: 1 } }.to raise_error(ArgumentError, /stall/)
    end

    it "rejects unknown error names, bad values, missing fixtures and mixed body kinds" do
      expect { fp.enqueue({ error: :teapot }) }.to raise_error(ArgumentError, /teapot/)
      expect { fp.enqueue({ cut_after: -1 }) }.to raise_error(ArgumentError, /cut_after/)
      expect { fp.enqueue("text") }.to raise_error(ArgumentError)
      expect { fp.enqueue({ fixture: "/nonexistent/cassette.json" }) }.to raise_error(ArgumentError, /nonexistent/)
      expect { fp.enqueue({ raw: "x", error: :server }) }.to raise_error(ArgumentError, /raw and error|error and raw/)
      name = "chat_streaming_responses_anthropic_claude-haiku-4-5_supports_streaming_responses.json"
      expect { fp.enqueue({ fixture: fixture_path(name), interaction: 5 }) }.to raise_error(ArgumentError, /5/)
    end
  end

  describe "robustness" do
    it "survives clients that leave mid-response or mid-request, without printing anything" do
      fp.enqueue({ text: (1..200).map { |i| "w#{i}" }.join(" "), chunk_delay: 0.005 })
      expect do
        conn = connect
        conn.post("/v1/chat/completions", openai_body(stream: true))
        conn.read_head
        conn.read_chunk
        conn.close

        half = connect
        half.sock.write("POST /v1/messages HTTP/1.1\r\nContent-Length: 500\r\n\r\n{\"model\"")
        half.close

        wait_for_no_connections
        expect(fp.connection_count).to eq(0)
      end.not_to output.to_stderr

      res = http { |h| post_json(h, "/v1/messages", anthropic_body) }
      expect(res.code).to eq("200")
    end

    it "stop closes stalled connections promptly and returns" do
      fp.enqueue({ text: "a b", stall_after: 1 }, { text: "slow", delay_headers: 30 })
      stalled = connect
      stalled.post("/v1/chat/completions", openai_body(stream: true))
      stalled.read_head
      stalled.read_chunk
      waiting = connect
      waiting.post("/v1/messages", anthropic_body)
      expect(waiting.silent?(0.2)).to be(true)

      stopper = Thread.new { fp.stop }
      expect(stalled.closed_within?(5)).to be(true)
      expect(waiting.closed_within?(5)).to be(true)
      expect(stopper.join(5)).not_to be_nil
      expect(fp.running?).to be(false)
    end
  end
end
