# frozen_string_literal: true

$LOAD_PATH.unshift File.expand_path("../../../../lib", __dir__)
require "llm_failover/testing"
require "json"
require "net/http"

# The FakeProvider as Google's hosts: Gemini on Google AI and on Vertex AI, Claude on Vertex
# AI, the OAuth token exchange Vertex AI's credentials go through. Plain Ruby over real HTTP
# (Net::HTTP), as fake_provider_spec.rb: the gem itself speaks these protocols only from
# phase 2 of issue 35.
module FakeProviderGeminiSupport
  FIXTURES = File.expand_path("../../../fixtures/recorded/gemini", __dir__)
  GEMINI = "/v1beta/models/gemini-2.5-flash"
  VERTEX = "/v1/projects/my-project/locations/global/publishers/google/models/gemini-2.5-pro"
  CLAUDE = "/v1/projects/my-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929"

  # What came back: status, headers, the body read so far and whether the body ended
  # properly (false when the server cut it).
  Reply = Struct.new(:status, :headers, :body, :complete) do
    def json
      JSON.parse(body)
    end

    # The data of each Server-Sent Event, parsed.
    def events
      body.split(/\r\n\r\n|\n\n/).reject(&:empty?).map { |e| e.delete_prefix("data: ") }
    end

    def chunks
      events.map { |data| JSON.parse(data) }
    end
  end

  def gemini = GEMINI
  def vertex = VERTEX
  def claude = CLAUDE
  def fixtures = FIXTURES

  def post(path, body, headers: {}, read_timeout: 10)
    Net::HTTP.start("127.0.0.1", fp.port, read_timeout: read_timeout) do |http|
      request = Net::HTTP::Post.new(path, { "Content-Type" => "application/json" }.merge(headers))
      request.body = body.is_a?(String) ? body : JSON.generate(body)
      read = +""
      http.request(request) do |res|
        complete = begin
          res.read_body { |segment| read << segment }
          true
        rescue EOFError, Errno::ECONNRESET
          false
        end
        return Reply.new(res.code.to_i, res.to_hash.transform_values(&:first), read, complete)
      end
    end
  end

  def contents(text = "Hi")
    { contents: [{ role: "user", parts: [{ text: text }] }] }
  end

  def parts_of(chunk)
    chunk.dig("candidates", 0, "content", "parts") || []
  end

  def texts(chunks)
    chunks.flat_map { |c| parts_of(c) }.filter_map { |p| p["text"] unless p["thought"] }.join
  end
end

RSpec.describe LlmFailover::Testing::FakeProvider, "as Google's hosts", :ruby_only do
  include FakeProviderGeminiSupport

  let(:fp) { described_class.start }

  after { fp.stop }

  describe "routes" do
    it "routes Gemini and Vertex AI paths by method, with the model from the path" do
      expect(fp.base_url(:gemini)).to eq(fp.url)
      expect(fp.base_url(:vertex)).to eq(fp.url)
      expect(fp.on(:google).base_url(:gemini)).to eq("#{fp.url}/providers/google")
      post("#{gemini}:generateContent", contents, headers: { "x-goog-api-key" => "AIza-test" })
      post("#{vertex}:streamGenerateContent?alt=sse", contents, headers: { "Authorization" => "Bearer ya29.x" })
      post("#{claude}:rawPredict", { anthropic_version: "vertex-2023-10-16", max_tokens: 5,
                                     messages: [{ role: "user", content: "Hi" }] })
      post("/v1beta/models/gemini-embedding-001:batchEmbedContents", { requests: [] })
      post("/token", "grant_type=refresh_token", headers: { "Content-Type" => "application/x-www-form-urlencoded" })
      got = fp.requests.map { |r| [r.api, r.stream?, r.path_model, r.vertex?, r.embeddings?] }
      expect(got).to eq([[:gemini, false, "gemini-2.5-flash", false, false],
                         [:gemini, true, "gemini-2.5-pro", true, false],
                         [:anthropic, false, "claude-sonnet-4-5@20250929", true, false],
                         [:gemini, false, "gemini-embedding-001", false, true],
                         [:oauth, false, nil, false, false]])
      expect(fp.requests[0].headers["x-goog-api-key"]).to eq("AIza-test")
      expect(fp.requests[1].bearer_token).to eq("ya29.x")
      expect(fp.token_requests.size).to eq(1)
    end

    it "unescapes the model of a path and 404s a method it does not speak" do
      post("/v1beta/models/tuned%2Fmine:generateContent", contents)
      expect(fp.requests.last.path_model).to eq("tuned/mine")
      res = post("/v1beta/models/gemini-2.5-flash:countTokens", contents)
      expect(res.status).to eq(404)
      expect(fp.requests.last.api).to be_nil
    end
  end

  describe "answers" do
    it "answers generateContent as Gemini does: parts, finishReason, counts, modelVersion, responseId" do
      fp.enqueue({ text: "Hello there", usage: { input: 12, output: 3, thoughts: 7, cached: 4 } })
      body = post("#{gemini}:generateContent", contents).json
      candidate = body["candidates"][0]
      expect(candidate["content"]).to eq("role" => "model", "parts" => [{ "text" => "Hello there" }])
      expect(candidate).to include("finishReason" => "STOP", "index" => 0)
      expect(body["usageMetadata"]).to include("promptTokenCount" => 12, "candidatesTokenCount" => 3,
                                               "thoughtsTokenCount" => 7, "cachedContentTokenCount" => 4,
                                               "totalTokenCount" => 22)
      expect(body["modelVersion"]).to eq("gemini-2.5-flash")
      expect(body["responseId"]).to match(/\A[A-Za-z0-9]{22}\z/)
    end

    it "streams whole responses in CRLF-ended frames, the finishReason last with the counts" do
      fp.enqueue({ text: "a b c", usage: { input: 5, output: 3 } })
      res = post("#{gemini}:streamGenerateContent?alt=sse", contents)
      expect(res.headers["content-type"]).to eq("text/event-stream")
      expect(res.body).to end_with("\r\n\r\n")
      chunks = res.chunks
      expect(chunks.size).to eq(4)
      expect(texts(chunks)).to eq("a b c")
      expect(chunks[0..2].map { |c| c["candidates"][0]["finishReason"] }).to eq([nil, nil, nil])
      expect(chunks.last["candidates"][0]["finishReason"]).to eq("STOP")
      expect(chunks.last["usageMetadata"]).to include("promptTokenCount" => 5, "candidatesTokenCount" => 3)
      expect(chunks.map { |c| c["responseId"] }.uniq.size).to eq(1)
    end

    it "answers by Vertex AI's route as Vertex does: no candidate index, trafficType until the last chunk" do
      fp.enqueue({ text: "x y" })
      chunks = post("#{vertex}:streamGenerateContent?alt=sse", contents).chunks
      expect(chunks.first["usageMetadata"]).to eq("trafficType" => "ON_DEMAND")
      expect(chunks.last["usageMetadata"]).to include("promptTokenCount" => 10, "trafficType" => "ON_DEMAND")
      expect(chunks.map { |c| c["candidates"][0].key?("index") }.uniq).to eq([false])
      expect(chunks.first).to include("createTime")
    end

    it "sends thought parts only when the request asks for them" do
      fp.enqueue({ text: "42", thinking: "Let me think" }, { text: "42", thinking: "Let me think" })
      plain = post("#{gemini}:generateContent", contents).json
      expect(parts_of(plain)).to eq([{ "text" => "42" }])
      expect(plain["usageMetadata"]["thoughtsTokenCount"]).to eq(3)
      asked = contents.merge(generationConfig: { thinkingConfig: { includeThoughts: true } })
      parts = parts_of(post("#{gemini}:generateContent", asked).json)
      expect(parts).to eq([{ "text" => "Let me think", "thought" => true }, { "text" => "42" }])
    end

    it "answers a schema request with the JSON as text" do
      fp.enqueue({ json: { "n" => 8 } })
      request = contents.merge(generationConfig: { responseMimeType: "application/json",
                                                   responseJsonSchema: { type: "object" } })
      expect(JSON.parse(parts_of(post("#{gemini}:generateContent", request).json)[0]["text"])).to eq("n" => 8)
    end

    it "answers Claude on Vertex AI with Anthropic's messages, the model from the path" do
      fp.enqueue({ text: "Hi from Claude" }, { text: "streamed", cut_after: 0 })
      body = { anthropic_version: "vertex-2023-10-16", max_tokens: 10, messages: [{ role: "user", content: "Hi" }] }
      answer = post("#{claude}:rawPredict", body).json
      expect(answer).to include("type" => "message", "model" => "claude-sonnet-4-5@20250929")
      expect(answer["content"]).to eq([{ "type" => "text", "text" => "Hi from Claude" }])
      cut = post("#{claude}:streamRawPredict", body.merge(stream: true))
      expect(cut.complete).to be(false)
      expect(cut.body).to include("event: message_start").and include('"model":"claude-sonnet-4-5@20250929"')
    end
  end

  describe "tool calls" do
    it "sends each call whole in one part, the first one signed, with Gemini's STOP" do
      fp.enqueue({ text: "Checking.", tool_calls: [{ name: "weather", arguments: { "city" => "Oslo" } },
                                                   { name: "clock", id: "call_7" }] })
      body = post("#{gemini}:generateContent", contents).json
      parts = parts_of(body)
      expect(parts[0]).to eq("text" => "Checking.")
      expect(parts[1]["functionCall"]).to eq("name" => "weather", "args" => { "city" => "Oslo" })
      expect(parts[1]["thoughtSignature"]).to match(%r{\A[A-Za-z0-9+/]+=*\z})
      expect(parts[2]).to eq("functionCall" => { "name" => "clock", "args" => {}, "id" => "call_7" })
      expect(body["candidates"][0]).to include("finishReason" => "STOP",
                                               "finishMessage" => "Model generated function call(s).")
    end

    it "streams a call as one chunk, cut_after counting it as one delta" do
      step = { tool_calls: [{ name: "weather", arguments: { "city" => "Oslo" } }, { name: "clock" }] }
      fp.enqueue(step, step.merge(cut_after: 1))
      whole = post("#{gemini}:streamGenerateContent?alt=sse", contents).chunks
      expect(whole.size).to eq(3)
      expect(whole.first(2).map { |c| parts_of(c)[0]["functionCall"]["name"] }).to eq(%w[weather clock])
      cut = post("#{gemini}:streamGenerateContent?alt=sse", contents)
      expect(cut.complete).to be(false)
      expect(cut.chunks.map { |c| parts_of(c)[0]["functionCall"]["name"] }).to eq(["weather"])
      expect(cut.chunks.last["candidates"][0]).not_to have_key("finishReason")
    end

    it "calls the one function toolConfig allows when a step calls a tool" do
      fp.enqueue({ tool_call: { "n" => 1 } })
      request = contents.merge(tools: [{ functionDeclarations: [{ name: "pick" }, { name: "other" }] }],
                               toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["pick"] } })
      expect(parts_of(post("#{gemini}:generateContent", request).json)[0]["functionCall"])
        .to eq("name" => "pick", "args" => { "n" => 1 })
    end

    it "reads a request's calls, results and files back" do
      png = ["\x89PNG".b].pack("m0")
      request = { contents: [
        { role: "user", parts: [{ inlineData: { mimeType: "image/png", data: png } }, { text: "What?" }] },
        { role: "model", parts: [{ functionCall: { name: "look", args: {} }, thoughtSignature: "c2ln" }] },
        { role: "user", parts: [{ functionResponse: { name: "look", response: { error: "no camera" } } }] }
      ] }
      post("#{gemini}:generateContent", request)
      seen = fp.requests.last
      expect(seen.tool_calls.map { |c| [c.message, c.name] }).to eq([[1, "look"]])
      expect(seen.tool_results.map { |r| [r.id, r.content, r.error] }).to eq([["look", "no camera", true]])
      file = seen.attachments.first
      expect([file.kind, file.mime_type, file.data, file.url?]).to eq([:image, "image/png", "\x89PNG".b, false])
    end
  end

  describe "faults" do
    it "stall_after: N sends N chunks, then keeps the connection silent" do
      fp.enqueue({ text: "a b c", stall_after: 1 })
      read = +""
      expect do
        Net::HTTP.start("127.0.0.1", fp.port, read_timeout: 0.5) do |http|
          req = Net::HTTP::Post.new("#{gemini}:streamGenerateContent?alt=sse", "Content-Type" => "application/json")
          req.body = JSON.generate(contents)
          http.request(req) { |res| res.read_body { |s| read << s } }
        end
      end.to raise_error(Net::ReadTimeout)
      expect(read.split("\r\n\r\n").size).to eq(1)
      expect(read).to include('"text":"a "')
    end

    it "malformed_after and error_event_after send Gemini's broken chunk and its in-stream error" do
      fp.enqueue({ text: "a b", malformed_after: 1 }, { text: "a b", error_event_after: 1 })
      events = post("#{gemini}:streamGenerateContent?alt=sse", contents).events
      expect { JSON.parse(events[1]) }.to raise_error(JSON::ParserError)
      expect(JSON.parse(events.last)["candidates"][0]["finishReason"]).to eq("STOP")
      res = post("#{gemini}:streamGenerateContent?alt=sse", contents)
      expect(res.complete).to be(true)
      expect(res.chunks.last).to eq("error" => { "code" => 503, "status" => "UNAVAILABLE",
                                                 "message" => "The model is overloaded. Please try again later." })
      expect(res.chunks.map { |c| c.dig("candidates", 0, "finishReason") }.compact).to be_empty
    end

    it "no_terminal ends the body cleanly without the finishReason chunk" do
      fp.enqueue({ text: "a b", no_terminal: true })
      res = post("#{gemini}:streamGenerateContent?alt=sse", contents)
      expect(res.complete).to be(true)
      expect(texts(res.chunks)).to eq("a b")
      expect(res.chunks.map { |c| c["candidates"][0]["finishReason"] }.compact).to be_empty
    end

    it "delay_headers and delay_first_token hold the answer back until the client gives up" do
      fp.enqueue({ text: "late", delay_headers: 5 }, { text: "late", delay_first_token: 5 })
      expect { post("#{gemini}:generateContent", contents, read_timeout: 0.3) }.to raise_error(Net::ReadTimeout)
      expect { post("#{gemini}:streamGenerateContent?alt=sse", contents, read_timeout: 0.3) }
        .to raise_error(Net::ReadTimeout)
      50.times { break if fp.requests.all?(&:client_closed?); sleep 0.05 }
      expect(fp.requests.map(&:client_closed?)).to eq([true, true])
    end

    it "reset: resets the connection before any byte" do
      fp.enqueue({ reset: true })
      expect { post("#{vertex}:generateContent", contents) }
        .to raise_error { |e| expect(e).to be_a(Errno::ECONNRESET).or be_a(EOFError) }
      expect(fp.request_count).to eq(1)
    end

    it "serves a recorded Gemini stream and a recorded Vertex answer as they arrived" do
      stream_file = File.join(fixtures, "chat_gemini_token_accounting_correctly_sums_candidatestokencount_and_" \
                                        "thoughtstokencount_in_streaming.json")
      vertex_file = File.join(fixtures, "chat_basic_chat_functionality_vertexai_gemini-2_5-flash_can_have_a_basic_" \
                                        "conversation.json")
      fp.enqueue({ fixture: stream_file }, { fixture: vertex_file, interaction: 1 })
      chunks = post("#{gemini}:streamGenerateContent?alt=sse", contents).chunks
      expect(chunks.last["usageMetadata"]).to include("candidatesTokenCount" => 71, "thoughtsTokenCount" => 137)
      expect(parts_of(post("#{vertex}:generateContent", contents).json)).to eq([{ "text" => "2 + 2 = **4**" }])
    end
  end

  describe "errors" do
    def error_of(step, path: "#{gemini}:generateContent")
      fp.enqueue(step)
      post(path, contents)
    end

    it "answers every canned error in Google's shape, with its status name" do
      want = { rate_limit: [429, "RESOURCE_EXHAUSTED"], insufficient_quota: [429, "RESOURCE_EXHAUSTED"],
               payment_required: [402, "RESOURCE_EXHAUSTED"], server: [500, "INTERNAL"],
               unavailable: [503, "UNAVAILABLE"], overloaded: [503, "UNAVAILABLE"],
               unauthorized: [400, "INVALID_ARGUMENT"], forbidden: [403, "PERMISSION_DENIED"],
               not_found: [404, "NOT_FOUND"], bad_request: [400, "INVALID_ARGUMENT"],
               context_length: [400, "INVALID_ARGUMENT"] }
      expect(want.keys + [:content_policy]).to match_array(LlmFailover::Testing::FakeProvider::CannedErrors::NAMES)
      want.each do |name, (status, type)|
        res = error_of({ error: name })
        expect([name, res.status, res.json["error"]["status"], res.json["error"]["code"]])
          .to eq([name, status, type, status])
      end
    end

    it "names a wrong key API_KEY_INVALID on Google AI, and answers a bad token with a 401 on Vertex AI" do
      key = error_of({ error: :unauthorized }).json["error"]
      expect(key["details"].map { |d| d["reason"] }.compact).to eq(["API_KEY_INVALID"])
      token = error_of({ error: :unauthorized }, path: "#{vertex}:generateContent")
      expect([token.status, token.json["error"]["status"]]).to eq([401, "UNAUTHENTICATED"])
    end

    it "puts retry_after into the body's RetryInfo, with no Retry-After header" do
      res = error_of({ error: :rate_limit, retry_after: 48 })
      expect(res.headers).not_to have_key("retry-after")
      info = res.json["error"]["details"].find { |d| d["@type"].end_with?("RetryInfo") }
      expect(info["retryDelay"]).to eq("48s")
      expect(res.json["error"]["message"]).to include("model: gemini-2.5-flash")
    end

    it "says prepaid credits are spent for the billing errors, and quotes the model for not_found" do
      expect(error_of({ error: :payment_required }).json["error"]["message"]).to include("prepayment credits are depleted")
      expect(error_of({ error: :not_found }).json["error"]["message"]).to start_with("models/gemini-2.5-flash is not found")
    end

    it "answers content_policy as Google does: a 200 whose prompt was blocked" do
      res = error_of({ error: :content_policy })
      expect(res.status).to eq(200)
      expect(res.json).not_to have_key("candidates")
      expect(res.json["promptFeedback"]["blockReason"]).to eq("SAFETY")
    end

    it "keeps Anthropic's error shape for Claude on Vertex AI" do
      res = error_of({ error: :overloaded }, path: "#{claude}:rawPredict")
      expect([res.status, res.json["error"]["type"]]).to eq([529, "overloaded_error"])
    end
  end

  describe "strict transcripts" do
    let(:fp) { described_class.start(strict_transcript: true) }

    def turn(call_part, results)
      { contents: [{ role: "user", parts: [{ text: "Weather?" }] },
                   { role: "model", parts: [call_part] },
                   { role: "user", parts: results }] }
    end

    let(:result) { { functionResponse: { name: "weather", response: { output: "sunny" } } } }

    it "answers a turn whose results do not match its calls with Gemini's 400" do
      res = post("#{gemini}:generateContent", turn({ functionCall: { name: "weather", args: {} } }, []))
      expect(res.status).to eq(400)
      expect(res.json["error"]).to include("status" => "INVALID_ARGUMENT")
      expect(res.json["error"]["message"]).to include("number of function response parts")
      expect(fp.queue_size).to eq(0)
    end

    it "wants Gemini 3's first call of the current turn signed, by this host or with the sentinel" do
      unsigned = turn({ functionCall: { name: "weather", args: {} } }, [result])
      res = post("/v1beta/models/gemini-3-pro-preview:generateContent", unsigned)
      expect(res.status).to eq(400)
      expect(res.json["error"]["message"]).to start_with("Function call is missing a thought_signature")
      expect(post("#{gemini}:generateContent", unsigned).status).to eq(200) # Gemini 2.5 does not check
      sentinel = turn({ functionCall: { name: "weather", args: {} },
                        thoughtSignature: "skip_thought_signature_validator" }, [result])
      expect(post("/v1beta/models/gemini-3-pro-preview:generateContent", sentinel).status).to eq(200)
    end

    it "takes back its own signature and refuses one it made for another host" do
      fp.enqueue({ tool_calls: [{ name: "weather" }] })
      lane = fp.on(:google).base_url(:gemini).delete_prefix(fp.url)
      part = parts_of(post("#{lane}#{gemini}:generateContent", contents).json)[0]
      again = turn(part, [result])
      expect(post("#{lane}/v1beta/models/gemini-3-pro-preview:generateContent", again).status).to eq(200)
      res = post("#{vertex}:generateContent", again)
      expect([res.status, res.json["error"]["message"]]).to eq([400, "Corrupted thought signature."])
    end
  end

  describe "embeddings" do
    it "answers batchEmbedContents and embedContent with the deterministic vectors, in order" do
      batch = { requests: %w[red\ apple green\ pear].map do |t|
        { model: "models/gemini-embedding-001", content: { parts: [{ text: t }] } }
      end }
      got = post("/v1beta/models/gemini-embedding-001:batchEmbedContents", batch).json["embeddings"]
      vector = LlmFailover::Testing::FakeProvider::EmbeddingAnswer.method(:vector)
      expect(got.map { |e| e["values"] }).to eq([vector.call("red apple"), vector.call("green pear")])
      one = post("/v1beta/models/gemini-embedding-001:embedContent", { content: { parts: [{ text: "red apple" }] } })
      expect(one.json["embedding"]["values"]).to eq(vector.call("red apple"))
    end

    it "takes embeddings' own steps, with Google's errors" do
      fp.enqueue({ text: "chat" })
      fp.enqueue_embeddings({ error: :rate_limit })
      res = post("/v1beta/models/gemini-embedding-001:batchEmbedContents", { requests: [] })
      expect([res.status, res.json["error"]["status"]]).to eq([429, "RESOURCE_EXHAUSTED"])
      expect(fp.queue_size).to eq(1)
    end
  end

  describe "the OAuth token endpoint" do
    def exchange
      post("/token", "grant_type=refresh_token&refresh_token=r", headers: { "Content-Type" => "application/x-www-form-urlencoded" })
    end

    it "issues an access token that says when it expires, and takes token steps of its own" do
      fp.enqueue({ text: "chat" })
      fp.enqueue_tokens({ expires_in: 120 }, { error: :unauthorized }, { access_token: "ya29.given", expires_in: 5 })
      first = exchange.json
      expect(first).to include("expires_in" => 120, "token_type" => "Bearer")
      expect(LlmFailover::Testing::FakeProvider::TokenAnswer.valid?(first["access_token"])).to be(true)
      refused = exchange
      expect([refused.status, refused.json["error"]]).to eq([400, "invalid_grant"])
      expect(exchange.json["access_token"]).to eq("ya29.given")
      expect(exchange.json["expires_in"]).to eq(3599) # the default, queue empty
      expect(fp.queue_size).to eq(1)
      expect(fp.token_requests.map(&:body)).to all(eq("grant_type=refresh_token&refresh_token=r"))
      expect(fp.token_url).to eq("#{fp.url}/token")
    end

    it "with check_tokens: refuses Vertex AI requests without a live token it issued" do
      server = described_class.start(check_tokens: true)
      begin
        call = lambda do |token|
          Net::HTTP.start("127.0.0.1", server.port) do |http|
            headers = { "Content-Type" => "application/json" }
            headers["Authorization"] = "Bearer #{token}" if token
            http.post("#{vertex}:generateContent", JSON.generate(contents), headers)
          end
        end
        expired = LlmFailover::Testing::FakeProvider::TokenAnswer.issue(expires_in: -1)
        live = Net::HTTP.post(URI(server.token_url), "grant_type=x")
        expect([call.call(nil).code, call.call("ya29.made-up").code, call.call(expired).code]).to eq(%w[401 401 401])
        expect(JSON.parse(call.call(nil).body)["error"]["status"]).to eq("UNAUTHENTICATED")
        expect(call.call(JSON.parse(live.body)["access_token"]).code).to eq("200")
        # Google AI's key is no token: not checked.
        plain = Net::HTTP.start("127.0.0.1", server.port) { |h| h.post("#{gemini}:generateContent", JSON.generate(contents)) }
        expect(plain.code).to eq("200")
      ensure
        server.stop
      end
    end

    it "with service_accounts: checks a service account's signed JWT as Google does" do
      key = OpenSSL::PKey::RSA.new(2048)
      email = "app@p.iam.gserviceaccount.com"
      server = described_class.start(service_accounts: { email => key.public_key.to_pem })
      begin
        b64 = ->(s) { Base64.urlsafe_encode64(s, padding: false) }
        jwt = lambda do |signer: key, alg: "RS256", **claims|
          now = Time.now.to_i
          input = [{ "alg" => alg, "typ" => "JWT" }, { "iss" => email, "aud" => server.token_url, "scope" => "s",
                                                        "iat" => now, "exp" => now + 3600 }.merge(claims.transform_keys(&:to_s))]
                  .map { |part| b64.call(JSON.generate(part)) }.join(".")
          "#{input}.#{b64.call(signer.sign(OpenSSL::Digest.new('SHA256'), input))}"
        end
        grant = lambda do |assertion|
          res = Net::HTTP.post(URI(server.token_url), URI.encode_www_form("grant_type" => "urn:ietf:params:oauth:grant-type:jwt-bearer",
                                                                           "assertion" => assertion))
          [res.code, JSON.parse(res.body).values_at("error", "error_description", "token_type")]
        end
        expect(grant.call(jwt.call)).to eq(["200", [nil, nil, "Bearer"]])
        refused = { "another key" => jwt.call(signer: OpenSSL::PKey::RSA.new(2048)),
                    "another account" => jwt.call(iss: "else@p.iam.gserviceaccount.com"),
                    "another endpoint" => jwt.call(aud: "https://oauth2.googleapis.com/token"),
                    "an expired one" => jwt.call(iat: Time.now.to_i - 7200, exp: Time.now.to_i - 3600),
                    "a day long" => jwt.call(exp: Time.now.to_i + 86_400),
                    "HS256" => jwt.call(alg: "HS256"), "no JWT" => "not.a-jwt" }
        expect(refused.transform_values { |assertion| grant.call(assertion)[1][1] })
          .to match("another key" => "Invalid JWT Signature.", "another account" => "Invalid grant: account not found",
                 "another endpoint" => "Invalid JWT: Failed audience check.",
                 "an expired one" => a_string_starting_with("Invalid JWT: Token must be a short-lived token"),
                 "a day long" => a_string_starting_with("Invalid JWT: Token must be a short-lived token"),
                 "HS256" => "Invalid JWT: Unsupported algorithm.", "no JWT" => "Invalid JWT: Malformed.")
        expect(refused.values.map { |assertion| grant.call(assertion)[0] }.uniq).to eq(["400"])
        # Other grants (an external account's token exchange) are not checked.
        expect(Net::HTTP.post(URI(server.token_url), "grant_type=urn:ietf:params:oauth:grant-type:token-exchange").code).to eq("200")
      ensure
        server.stop
      end
    end
  end
end
