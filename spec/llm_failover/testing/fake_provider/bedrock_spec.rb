# frozen_string_literal: true

$LOAD_PATH.unshift File.expand_path("../../../../lib", __dir__)
require "llm_failover/testing"
require "json"
require "net/http"
require "open3"
require "zlib"

# The FakeProvider speaking Bedrock Converse and ConverseStream, talked to with Net::HTTP
# only (the gem cannot call Bedrock yet). ConverseStream's frames are read here by the
# spec's own reader, so that their CRCs are checked independently of the server's writer.
module FakeProviderBedrockSupport
  MODEL = "us.amazon.nova-2-lite-v1:0"
  PATH = "/model/us.amazon.nova-2-lite-v1%3A0/converse"
  STREAM_PATH = "#{PATH}-stream".freeze
  RECORDED = File.expand_path("../../../fixtures/recorded/bedrock", __dir__)

  # One event-stream message: its string headers and its payload.
  Frame = Struct.new(:headers, :payload, :crc_ok) do
    def type
      headers[":event-type"] || headers[":exception-type"]
    end

    def json
      JSON.parse(payload)
    end
  end

  # A streamed answer as far as it came: its frames, whether the body ended properly.
  Streamed = Struct.new(:status, :headers, :frames, :complete)

  # Splits a body into frames (prelude, string headers, payload, message CRC), checking
  # both CRCs; a cut message at the end is left out.
  def frames_of(body)
    body = body.b
    frames = []
    at = 0
    while body.bytesize - at >= 12
      total, head_len, prelude_crc = body.byteslice(at, 12).unpack("NNN")
      expect(Zlib.crc32(body.byteslice(at, 8))).to eq(prelude_crc)
      break if body.bytesize - at < total

      raw = body.byteslice(at, total)
      headers = {}
      h = raw.byteslice(12, head_len)
      until h.empty?
        n = h.getbyte(0)
        name = h.byteslice(1, n)
        expect(h.getbyte(1 + n)).to eq(7) # a string
        len = h.byteslice(2 + n, 2).unpack1("n")
        headers[name] = h.byteslice(4 + n, len)
        h = h.byteslice(4 + n + len..)
      end
      crc_ok = Zlib.crc32(raw.byteslice(0, total - 4)) == raw.byteslice(total - 4, 4).unpack1("N")
      frames << Frame.new(headers, raw.byteslice(12 + head_len, total - head_len - 16), crc_ok)
      at += total
    end
    frames
  end

  def body(**extra)
    { messages: [{ role: "user", content: [{ text: "Hi" }] }], inferenceConfig: {} }.merge(extra)
  end

  def post(path, json, headers = {})
    Net::HTTP.start("127.0.0.1", fp.port) do |h|
      h.post(path, JSON.generate(json), { "Content-Type" => "application/json" }.merge(headers))
    end
  end

  # POSTs and reads the stream until it ends, is cut, or stays silent for +read_timeout+.
  def stream(path = STREAM_PATH, json = body, read_timeout: 5)
    data = +"".b
    status = headers = nil
    complete = false
    Net::HTTP.start("127.0.0.1", fp.port, read_timeout: read_timeout) do |h|
      req = Net::HTTP::Post.new(path, "Content-Type" => "application/json")
      req.body = JSON.generate(json)
      h.request(req) do |res|
        status = res.code.to_i
        headers = res.to_hash.transform_values(&:first)
        res.read_body { |piece| data << piece }
        complete = true
      end
    rescue EOFError, Net::ReadTimeout, Errno::ECONNRESET
      complete = false
    end
    Streamed.new(status, headers, frames_of(data), complete)
  end

  def converse_path = PATH
  def model_id = MODEL
  def recorded_dir = RECORDED

  def texts(frames)
    frames.select { |f| f.type == "contentBlockDelta" }.filter_map { |f| f.json.dig("delta", "text") }
  end
end

RSpec.describe "LlmFailover::Testing::FakeProvider speaking Bedrock", :ruby_only do
  include FakeProviderBedrockSupport

  let(:fp) { LlmFailover::Testing::FakeProvider.start }

  after { fp.stop }

  describe "routes" do
    it "answers Converse and ConverseStream at the model's path, recording the model unescaped" do
      expect(fp.base_url(:bedrock)).to eq(fp.url)
      expect(post(converse_path, body).code).to eq("200")
      expect(stream.status).to eq(200)
      expect(fp.requests.map { |r| [r.api, r.stream?, r.model] }).to eq([[:bedrock, false, model_id],
                                                                        [:bedrock, true, model_id]])
      expect(fp.requests.first.json["messages"]).to eq([{ "role" => "user", "content" => [{ "text" => "Hi" }] }])
    end

    it "takes a lane's steps at the lane's base_url, and answers 404 elsewhere" do
      fp.on(:aws).enqueue({ text: "from the lane" })
      lane = URI(fp.on(:aws).base_url(:bedrock)).path
      doc = JSON.parse(post("#{lane}#{converse_path}", body).body)
      expect(doc.dig("output", "message", "content")).to eq([{ "text" => "from the lane" }])
      expect(fp.on(:aws).requests.map(&:model)).to eq([model_id])
      expect(post("/model/m/invoke", body).code).to eq("404")
    end
  end

  describe "answers" do
    it "is Converse's JSON: content blocks, stopReason, usage, the request id in x-amzn-RequestId" do
      fp.enqueue({ text: "Hello there", usage: { input: 7, output: 2 } })
      res = post(converse_path, body)
      doc = JSON.parse(res.body)
      expect(res["x-amzn-requestid"]).to match(/\A\h{8}-\h{4}-/)
      expect(doc["output"]).to eq("message" => { "content" => [{ "text" => "Hello there" }], "role" => "assistant" })
      expect(doc["stopReason"]).to eq("end_turn")
      expect(doc["usage"]).to eq("inputTokens" => 7, "outputTokens" => 2, "totalTokens" => 9)
      expect(doc.keys).not_to include("model", "id")
    end

    it "gives parallel tool calls as toolUse blocks, and a forced tool its arguments" do
      forced = { toolConfig: { tools: [{ toolSpec: { name: "answer", inputSchema: { json: { type: "object" } } } }],
                               toolChoice: { tool: { name: "answer" } } } }
      fp.enqueue({ tool_calls: [{ name: "weather", arguments: { "city" => "Oslo" } }, { name: "clock" }] },
                 { json: { "n" => 8 } })
      doc = JSON.parse(post(converse_path, body).body)
      uses = doc.dig("output", "message", "content").map { |b| b["toolUse"] }
      expect(uses.map { |u| [u["name"], u["input"]] }).to eq([["weather", { "city" => "Oslo" }], ["clock", {}]])
      expect(uses.map { |u| u["toolUseId"] }).to all(match(/\Atooluse_[A-Za-z0-9]{22}\z/))
      expect(doc["stopReason"]).to eq("tool_use")
      doc = JSON.parse(post(converse_path, body(**forced)).body)
      expect(doc.dig("output", "message", "content", 0, "toolUse")).to include("name" => "answer", "input" => { "n" => 8 })
    end

    it "gives thinking as a reasoningContent block before the text" do
      fp.enqueue({ text: "4", thinking: "two and two" })
      content = JSON.parse(post(converse_path, body).body).dig("output", "message", "content")
      expect(content[0]["reasoningContent"]["reasoningText"]).to include("text" => "two and two")
      expect(content[1]).to eq("text" => "4")
    end
  end

  describe "ConverseStream" do
    it "is AWS's event stream: framed messages with good CRCs, a padded payload each, messageStop then metadata" do
      fp.enqueue({ text: "Hello there friend", usage: { input: 5, output: 3 } })
      res = stream
      expect(res.headers["content-type"]).to eq("application/vnd.amazon.eventstream")
      expect(res.complete).to be(true)
      expect(res.frames.map(&:crc_ok)).to all(be(true))
      expect(res.frames.map(&:type)).to eq(%w[messageStart contentBlockDelta contentBlockDelta contentBlockDelta
                                              contentBlockStop messageStop metadata])
      expect(res.frames.map { |f| f.headers[":message-type"] }.uniq).to eq(["event"])
      expect(res.frames.map { |f| f.json["p"] }).to all(match(/\A[a-z]+\z/))
      expect(texts(res.frames).join).to eq("Hello there friend")
      expect(res.frames[-2].json["stopReason"]).to eq("end_turn")
      expect(res.frames[-1].json["usage"]).to eq("inputTokens" => 5, "outputTokens" => 3, "totalTokens" => 8)
    end

    it "opens a tool call with contentBlockStart (its id and name) and streams its input in pieces" do
      fp.enqueue({ text: "Let me look.", tool_calls: [{ name: "weather", chunks: ['{"ci', 'ty":"Oslo"}'] }] })
      frames = stream.frames
      start = frames.find { |f| f.type == "contentBlockStart" }.json
      expect(start["contentBlockIndex"]).to eq(1)
      expect(start.dig("start", "toolUse")).to include("name" => "weather", "toolUseId" => start_with("tooluse_"))
      pieces = frames.select { |f| f.type == "contentBlockDelta" && f.json["contentBlockIndex"] == 1 }
      expect(pieces.map { |f| f.json.dig("delta", "toolUse", "input") }).to eq(['{"ci', 'ty":"Oslo"}'])
      expect(texts(frames)).to eq(["Let ", "me ", "look."])
      expect(frames.find { |f| f.type == "messageStop" }.json["stopReason"]).to eq("tool_use")
    end

    it "streams thinking as reasoningContent deltas, its signature last" do
      fp.enqueue({ text: "4", thinking: "two and two" })
      reasoning = stream.frames.filter_map { |f| f.json.dig("delta", "reasoningContent") if f.type == "contentBlockDelta" }
      expect(reasoning.filter_map { |r| r["text"] }.join).to eq("two and two")
      expect(reasoning.last.keys).to eq(["signature"])
    end
  end

  describe "stream faults" do
    it "cut_after: N sends N deltas, then closes: no messageStop, no metadata, no last chunk" do
      fp.enqueue({ text: "a b c d", cut_after: 2 })
      res = stream
      expect(res.complete).to be(false)
      expect(texts(res.frames)).to eq(["a ", "b "])
      expect(res.frames.map(&:type)).not_to include("messageStop", "metadata")
    end

    it "stall_after: N sends N deltas, then silence" do
      fp.enqueue({ text: "a b c", stall_after: 1 })
      res = stream(read_timeout: 0.5)
      expect(res.complete).to be(false)
      expect(texts(res.frames)).to eq(["a "])
    end

    it "malformed_after: N sends a frame whose message CRC is wrong after N deltas" do
      fp.enqueue({ text: "a b c", malformed_after: 1 })
      res = stream
      expect(res.frames.map(&:crc_ok)).to eq([true, true, false, true, true, true, true, true])
      expect(res.frames[2].type).to eq("contentBlockDelta")
    end

    it "error_event_after: N sends ConverseStream's exception message and ends the body cleanly" do
      fp.enqueue({ text: "a b c", error_event_after: 2 })
      res = stream
      expect(res.complete).to be(true)
      last = res.frames.last
      expect(last.headers).to include(":message-type" => "exception", ":exception-type" => "modelStreamErrorException")
      expect(last.json["message"]).to start_with("An error occurred while streaming")
      expect(texts(res.frames)).to eq(["a ", "b "])
    end

    it "no_terminal: the body ends cleanly without messageStop and metadata" do
      fp.enqueue({ text: "a b", no_terminal: true })
      res = stream
      expect(res.complete).to be(true)
      expect(res.frames.map(&:type).last).to eq("contentBlockStop")
    end

    it "delay_first_token: messageStart, then the first delta held back" do
      fp.enqueue({ text: "a b", delay_first_token: 1 })
      res = stream(read_timeout: 0.4)
      expect(res.frames.map(&:type)).to eq(["messageStart"])
    end

    it "reset: the connection goes before any answer" do
      fp.enqueue({ reset: true })
      expect { post(converse_path, body) }.to raise_error { |e| expect(e).to be_a(Errno::ECONNRESET).or be_a(EOFError) }
    end
  end

  describe "errors" do
    it "answers each error with AWS's status, the x-amzn-errortype that names it and a {message} body" do
      expected = { rate_limit: [429, "ThrottlingException"], overloaded: [429, "ModelNotReadyException"],
                   unavailable: [503, "ServiceUnavailableException"], server: [500, "InternalServerException"],
                   unauthorized: [403, "UnrecognizedClientException"], forbidden: [403, "AccessDeniedException"],
                   not_found: [404, "ResourceNotFoundException"], bad_request: [400, "ValidationException"],
                   context_length: [400, "ValidationException"], content_policy: [400, "ValidationException"] }
      fp.enqueue(*expected.keys.map { |e| { error: e } })
      expected.each do |name, (status, type)|
        res = post(converse_path, body)
        expect([res.code.to_i, res["x-amzn-errortype"]])
          .to eq([status, "#{type}:http://internal.amazon.com/coral/com.amazon.bedrock/"]), name.to_s
        expect(JSON.parse(res.body).keys).to eq(["message"])
      end
    end

    it "keeps errors Bedrock has no name for in the OpenAI shape, and takes a step's status and headers" do
      fp.enqueue({ error: :insufficient_quota }, { error: :rate_limit, status: 503, headers: { "x-extra" => "1" } })
      res = post(converse_path, body)
      expect(res.code).to eq("429")
      expect(JSON.parse(res.body).dig("error", "code")).to eq("insufficient_quota")
      res = post(converse_path, body)
      expect([res.code, res["x-amzn-errortype"], res["x-extra"]]).to match(["503", start_with("ThrottlingException:"), "1"])
    end

    it "serves a recorded Converse error with the header that names it" do
      fp.enqueue({ fixture: File.join(recorded_dir, "chat_error_handling_with_bedrock_amazon_nova-2-lite-v1_0_" \
                                                "raises_appropriate_auth_error.json") })
      res = post(converse_path, body)
      expect(res.code).to eq("403")
      expect(res["x-amzn-errortype"]).to start_with("UnrecognizedClientException:")
    end

    it "streams a recorded (base64) ConverseStream body a message per chunk" do
      events = [["messageStart", '{"p":"abc","role":"assistant"}'],
                ["contentBlockDelta", '{"contentBlockIndex":0,"delta":{"text":"rec"},"p":"a"}'],
                ["messageStop", '{"p":"ab","stopReason":"end_turn"}'],
                ["metadata", '{"p":"a","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}']]
      raw = events.map { |t, p| LlmFailover::Testing::FakeProvider::EventStream.event(t, p) }.join
      doc = { "interactions" => [{ "response" => {
        "status" => 200, "headers" => { "content-type" => "application/vnd.amazon.eventstream" },
        "body" => [raw].pack("m0"), "encoding" => "base64"
      } }] }
      fp.enqueue({ fixture: doc })
      res = stream
      expect(res.frames.map(&:type)).to eq(%w[messageStart contentBlockDelta messageStop metadata])
      expect(res.frames.map(&:crc_ok)).to all(be(true))
    end
  end

  describe "transcripts and attachments" do
    let(:call_turns) do
      [{ role: "user", content: [{ text: "Weather?" }] },
       { role: "assistant", content: [{ toolUse: { toolUseId: "tooluse_a", name: "weather", input: {} } }] },
       { role: "user", content: [{ toolResult: { toolUseId: "tooluse_a", content: [{ text: "12C" }], status: "error" } }] }]
    end
    let(:tools) { { toolConfig: { tools: [{ toolSpec: { name: "weather", inputSchema: { json: { type: "object" } } } }] } } }

    it "reads a request's tool calls and results in Converse's blocks" do
      post(converse_path, body(messages: call_turns, **tools))
      request = fp.requests.last
      expect(request.tool_calls.map { |c| [c.id, c.name] }).to eq([%w[tooluse_a weather]])
      expect(request.tool_results.map { |r| [r.id, r.content, r.error] }).to eq([["tooluse_a", "12C", true]])
    end

    it "refuses, as Bedrock does, a transcript a strict provider refuses" do
      fp.strict_transcript = true
      refusals = [body(messages: call_turns), # no toolConfig
                  body(messages: call_turns.first(2), **tools), # a call without its result
                  body(messages: [call_turns[0], call_turns[0]]), # two user turns in a row
                  body(messages: [call_turns[0], { role: "assistant", content: [{ toolUse: { toolUseId: "a:b",
                                                                                             name: "w", input: {} } }] },
                                  call_turns[2]], **tools)]
      refusals.each do |json|
        res = post(converse_path, json)
        expect([res.code, res["x-amzn-errortype"]]).to match(["400", start_with("ValidationException:")]), json.to_s
      end
      expect(post(converse_path, body(messages: call_turns, **tools)).code).to eq("200")
      expect(fp.queue_size).to eq(0)
    end

    it "reads back the images and PDFs a request carried" do
      content = [{ image: { format: "png", source: { bytes: ["PNG!"].pack("m0") } } },
                 { document: { format: "pdf", name: "Q3 report", source: { bytes: ["%PDF"].pack("m0") } } },
                 { text: "What is in these?" }]
      post(converse_path, body(messages: [{ role: "user", content: content }]))
      files = fp.requests.last.attachments
      expect(files.map { |f| [f.kind, f.mime_type, f.data, f.filename, f.url?] })
        .to eq([[:image, "image/png", "PNG!", nil, false], [:document, "application/pdf", "%PDF", "Q3 report", false]])
    end
  end

  describe "SigV4 (aws_credentials:)" do
    let(:fp) { LlmFailover::Testing::FakeProvider.start(aws_credentials: { "AKID" => "SECRET" }) }
    let(:sigv4) { LlmFailover::Testing::FakeProvider::SigV4 }

    it "computes AWS's published get-vanilla and post-vanilla signatures" do
      { "GET" => "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
        "POST" => "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b" }.each do |method, want|
        creq = sigv4.canonical_request(method: method, path: "/", body: "", signed: %w[host x-amz-date],
                                       headers: { "host" => "example.amazonaws.com", "x-amz-date" => "20150830T123600Z" })
        sts = ["AWS4-HMAC-SHA256", "20150830T123600Z", "20150830/us-east-1/service/aws4_request",
               OpenSSL::Digest::SHA256.hexdigest(creq)].join("\n")
        expect(sigv4.signature(secret: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", date: "20150830",
                               region: "us-east-1", service: "service", string_to_sign: sts)).to eq(want)
      end
      expect(sigv4.canonical_uri("/model/m%3A0/converse")).to eq("/model/m%253A0/converse")
    end

    it "answers an unsigned, unknown or wrongly signed request with AWS's 403, taking no step" do
      fp.enqueue({ text: "never" })
      auth = ->(key, sig) { "AWS4-HMAC-SHA256 Credential=#{key}/20260101/us-east-1/bedrock/aws4_request, " \
                            "SignedHeaders=host;x-amz-date, Signature=#{sig}" }
      cases = [[{}, "MissingAuthenticationTokenException"],
               [{ "Authorization" => auth.call("NOPE", "0" * 64), "X-Amz-Date" => "20260101T000000Z" },
                "UnrecognizedClientException"],
               [{ "Authorization" => auth.call("AKID", "0" * 64), "X-Amz-Date" => "20260101T000000Z" },
                "InvalidSignatureException"]]
      cases.each do |headers, name|
        res = post(converse_path, body, headers)
        expect([res.code, res["x-amzn-errortype"]]).to match(["403", start_with("#{name}:")])
      end
      expect(fp.queue_size).to eq(1)
    end

    # What the gem's path encoding rests on, with this machine's libcurl (the curl tool
    # links the same library): libcurl before 8.14 signs the URL's path as it is, AWS
    # checks the path as sent escaped once more; so the URL carries the escaped path and
    # the request line the path itself (lf_prepare.c), and a newer libcurl needs neither.
    it "accepts a libcurl SigV4 signature of a model id with ':' only as lf_prepare sends it" do
      version, status = Open3.capture2e("curl", "--version")
      skip "no curl tool" unless status.success?
      escapes = Gem::Version.new(version[%r{libcurl/(\d+\.\d+\.\d+)}, 1]) >= Gem::Version.new("8.14.0")
      send = lambda do |url, target = nil|
        args = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--aws-sigv4", "aws:amz:us-east-1:bedrock",
                "--user", "AKID:SECRET", "-H", "Content-Type: application/json", "-d", JSON.generate(body)]
        args += ["--request-target", target] if target
        Open3.capture2(*args, url).first
      end
      fp.default = { text: "signed" }
      plain = send.call("#{fp.url}#{converse_path}")
      escaped = send.call("#{fp.url}#{sigv4.canonical_uri(converse_path)}", converse_path)
      expect([plain, escaped]).to eq(escapes ? %w[200 403] : %w[403 200])
      expect(fp.requests.map(&:path)).to eq([converse_path, converse_path])
    end
  end
end
