# frozen_string_literal: true

$LOAD_PATH.unshift File.expand_path("../../../../lib", __dir__)
require "llm_failover/testing"
require "json"
require "net/http"

# The FakeProvider's Responses API and Azure's paths and key header, over real HTTP
# (Net::HTTP), held against the recordings in spec/fixtures/recorded/responses. Plain Ruby
# only: the gem cannot call these protocols before the seam carries them (issue 35, phase 2).
RSpec.describe LlmFailover::Testing::FakeProvider, "Responses API and Azure", :ruby_only do
  let(:fp) { described_class.start }
  let(:recorded) { File.expand_path("../../../fixtures/recorded/responses", __dir__) }

  after { fp.stop }

  Reply = Struct.new(:status, :headers, :body, :complete) do
    def json
      JSON.parse(body)
    end

    # Every event of an SSE body: [type, data].
    def events
      body.split("\n\n").map do |block|
        [block[/^event: (.*)$/, 1], JSON.parse(block[/^data: (.*)$/, 1])]
      end
    end
  end

  def post(path, body, headers: { "Authorization" => "Bearer test" }, read_timeout: 5)
    Net::HTTP.start("127.0.0.1", fp.port, read_timeout: read_timeout) do |http|
      req = Net::HTTP::Post.new(path, { "Content-Type" => "application/json" }.merge(headers))
      req.body = body.is_a?(String) ? body : JSON.generate(body)
      chunks = +""
      complete = false
      res = nil
      begin
        http.request(req) do |r|
          res = r
          r.read_body { |chunk| chunks << chunk }
        end
        complete = true
      rescue EOFError, Errno::ECONNRESET, Net::ReadTimeout
        complete = false
      end
      Reply.new(res && Integer(res.code), res&.to_hash&.transform_values(&:first), chunks, complete)
    end
  end

  def ask(stream: false, **extra)
    post("/v1/responses", { "model" => "gpt-5-nano", "input" => [{ "role" => "user", "content" => "Hi" }],
                            "stream" => stream, "store" => false }.merge(extra.transform_keys(&:to_s)))
  end

  def deltas(reply, type = "response.output_text.delta")
    reply.events.select { |t, _| t == type }.map { |_, d| d["delta"] }
  end

  def fixture(name)
    JSON.parse(File.read(File.join(recorded, name)))
  end

  describe "answers" do
    it "answers a plain request with a completed response: a message, usage and the model asked for" do
      fp.enqueue({ text: "Hello there", usage: { input: 7, output: 3 } })
      reply = ask
      expect(reply.status).to eq(200)
      expect(reply.headers["x-request-id"]).to start_with("req_")
      body = reply.json
      expect(body.values_at("object", "status", "model")).to eq(%w[response completed gpt-5-nano])
      expect(body["output"].map { |i| i["type"] }).to eq(["message"])
      expect(body["output"][0]["content"]).to eq([{ "type" => "output_text", "annotations" => [], "logprobs" => [],
                                                   "text" => "Hello there" }])
      expect(body["usage"].values_at("input_tokens", "output_tokens")).to eq([7, 3])
      expect(body["usage"]["input_tokens_details"]).to eq("cached_tokens" => 0)
      expect([fp.requests.last.api, fp.requests.last.stream]).to eq([:responses, false])
    end

    it "streams typed events, one per HTTP chunk, ending with response.completed holding the whole response" do
      fp.enqueue({ text: "a b c" })
      reply = ask(stream: true)
      expect(reply.complete).to be(true)
      types = reply.events.map(&:first)
      expect(types).to eq(%w[response.created response.in_progress response.output_item.added
                             response.content_part.added response.output_text.delta response.output_text.delta
                             response.output_text.delta response.output_text.done response.content_part.done
                             response.output_item.done response.completed])
      expect(reply.events.map { |t, d| d["type"] == t }).to all(be(true))
      expect(reply.events.map { |_, d| d["sequence_number"] }).to eq((0...types.size).to_a)
      expect(deltas(reply)).to eq(["a ", "b ", "c"])
      completed = reply.events.last[1]["response"]
      expect(completed["output"][0]["content"][0]["text"]).to eq("a b c")
      expect(completed["usage"]["output_tokens"]).to eq(3)
    end

    it "streams the shape the recordings show, event for event" do
      events = fixture("chat_streaming_responses_openai_gpt-5-nano_supports_streaming_responses.json")
               .dig("interactions", 0, "response", "body").split("\n\n").map { |e| e[/^event: (.*)$/, 1] }
      fp.enqueue({ text: "1, 2, 3", redacted_thinking: true })
      mine = ask(stream: true).events.map(&:first)
      # Deltas collapse: their number is the model's business.
      expect(mine.chunk_while { |a, b| a == b }.map(&:first)).to eq(events.chunk_while { |a, b| a == b }.map(&:first))
    end

    it "answers tool calls after the text, whole and streamed, with call ids and argument deltas" do
      step = { text: "Let me look.", tool_calls: [{ name: "weather", arguments: { "city" => "Oslo" } },
                                                  { name: "clock", id: "call_given" }] }
      fp.enqueue(step, step)
      plain = ask.json["output"]
      expect(plain.map { |i| i["type"] }).to eq(%w[message function_call function_call])
      expect(plain[1].values_at("name", "arguments", "status")).to eq(["weather", '{"city":"Oslo"}', "completed"])
      expect(plain[1]["call_id"]).to match(/\Acall_\w{24}\z/)
      expect(plain[2].values_at("call_id", "arguments")).to eq(%w[call_given {}])

      reply = ask(stream: true)
      added = reply.events.select { |t, _| t == "response.output_item.added" }.map { |_, d| d["item"] }
      expect(added.map { |i| i["type"] }).to eq(%w[message function_call function_call])
      expect(added[1].values_at("name", "arguments", "status")).to eq(["weather", "", "in_progress"])
      expect(deltas(reply, "response.function_call_arguments.delta").join).to eq('{"city":"Oslo"}{}')
      done = reply.events.select { |t, _| t == "response.output_item.done" }.map { |_, d| d["item"] }
      expect(done.map { |i| i["arguments"] }).to eq([nil, '{"city":"Oslo"}', "{}"])
      expect(reply.events.last[0]).to eq("response.completed")
    end

    it "ends an answer cut short as response.incomplete with the reason" do
      fp.enqueue({ text: "a b", finish_reason: "length" }, { text: "x", finish_reason: "content_filter" })
      last = ask(stream: true).events.last
      expect(last[0]).to eq("response.incomplete")
      expect(last[1]["response"].values_at("status", "incomplete_details"))
        .to eq(["incomplete", { "reason" => "max_output_tokens" }])
      expect(ask.json["incomplete_details"]).to eq("reason" => "content_filter")
    end
  end

  describe "reasoning items" do
    it "sends a reasoning item first, whose encrypted_content differs in added, done and completed" do
      fp.enqueue({ thinking: "The user wants a greeting.", text: "Hi" })
      reply = ask(stream: true)
      added = reply.events.find { |t, d| t == "response.output_item.added" && d["item"]["type"] == "reasoning" }
      done = reply.events.find { |t, d| t == "response.output_item.done" && d["item"]["type"] == "reasoning" }
      final = reply.events.last[1]["response"]["output"][0]
      secrets = [added[1]["item"], done[1]["item"], final].map { |i| i["encrypted_content"] }
      expect(secrets.uniq.size).to eq(3)
      expect(secrets.map { |s| described_class::SealedState.read(s).final }).to eq([false, true, true])
      expect(deltas(reply, "response.reasoning_summary_text.delta").join).to eq("The user wants a greeting.")
      expect(final["summary"]).to eq([{ "type" => "summary_text", "text" => "The user wants a greeting." }])
      expect(reply.events.last[1]["response"]["usage"]["output_tokens_details"]["reasoning_tokens"]).to eq(5)
    end

    it "refuses, when strict, a reasoning item sent back with output_item.added's encrypted_content" do
      fp.strict_transcript = true
      fp.enqueue({ thinking: "Think.", tool_calls: [{ name: "f" }] })
      events = ask(stream: true).events
      item = ->(kind) { events.find { |t, d| t == kind && d["item"]["type"] == "reasoning" }[1]["item"] }
      call = events.last[1]["response"]["output"].find { |i| i["type"] == "function_call" }
      turn = lambda do |secret|
        [{ "role" => "user", "content" => "Hi" }, { "type" => "reasoning", "summary" => [], "encrypted_content" => secret },
         call.slice("type", "call_id", "name", "arguments"),
         { "type" => "function_call_output", "call_id" => call["call_id"], "output" => "ok" }]
      end
      refused = ask(input: turn.call(item.call("response.output_item.added")["encrypted_content"]))
      expect(refused.status).to eq(400)
      expect(refused.json["error"].values_at("type", "code")).to eq(%w[invalid_request_error invalid_encrypted_content])
      expect(refused.json["error"]["message"]).to match(/\AThe encrypted content gAAA\.\.\..{4} could not be verified\.\z/)
      expect(ask(input: turn.call(item.call("response.output_item.done")["encrypted_content"])).status).to eq(200)
      expect(fp.requests.last.tool_results.map(&:id)).to eq([call["call_id"]])
    end

    it "refuses, when strict, an output without its call and a call without its output" do
      fp.strict_transcript = true
      orphan = ask(input: [{ "role" => "user", "content" => "Hi" },
                           { "type" => "function_call_output", "call_id" => "call_x", "output" => "1" }])
      expect(orphan.status).to eq(400)
      expect(orphan.json["error"]["message"]).to eq("No tool call found for function call output with call_id call_x.")
      lonely = ask(input: [{ "role" => "user", "content" => "Hi" },
                           { "type" => "function_call", "call_id" => "call_y", "name" => "f", "arguments" => "{}" }])
      expect(lonely.json["error"].values_at("message", "param")).to eq(["No tool output found for function call call_y.",
                                                                        "input"])
      expect(fp.queue_size).to eq(0)
    end
  end

  describe "faults" do
    it "cut_after: N sends N deltas and closes without response.completed" do
      fp.enqueue({ text: "a b c d", cut_after: 2 })
      reply = ask(stream: true)
      expect(reply.complete).to be(false)
      expect(deltas(reply)).to eq(["a ", "b "])
      expect(reply.events.map(&:first)).not_to include("response.completed")
    end

    it "cuts inside a tool call's arguments as well" do
      fp.enqueue({ tool_calls: [{ name: "f", chunks: ['{"a"', ":1}"] }], cut_after: 1 })
      reply = ask(stream: true)
      expect(reply.complete).to be(false)
      expect(deltas(reply, "response.function_call_arguments.delta")).to eq(['{"a"'])
      expect(reply.events.map(&:first)).not_to include("response.output_item.done")
    end

    it "stall_after: N sends N deltas, then silence" do
      fp.enqueue({ text: "a b c", stall_after: 1 })
      reply = post("/v1/responses", { "model" => "m", "input" => "Hi", "stream" => true }, read_timeout: 0.5)
      expect(reply.complete).to be(false)
      expect(deltas(reply)).to eq(["a "])
    end

    it "delay_first_token sends the preamble, then holds back the first delta" do
      fp.enqueue({ text: "a b", delay_first_token: 30 })
      reply = post("/v1/responses", { "model" => "m", "input" => "Hi", "stream" => true }, read_timeout: 0.5)
      expect(reply.complete).to be(false)
      expect(reply.events.map(&:first)).to eq(%w[response.created response.in_progress response.output_item.added
                                                 response.content_part.added])
    end

    it "delay_headers holds back the whole answer" do
      fp.enqueue({ text: "a", delay_headers: 30 })
      reply = post("/v1/responses", { "model" => "m", "input" => "Hi" }, read_timeout: 0.5)
      expect([reply.status, reply.complete]).to eq([nil, false])
    end

    it "malformed_after: N puts one broken output_text.delta after N deltas" do
      fp.enqueue({ text: "a b", malformed_after: 1 })
      reply = ask(stream: true)
      broken = reply.body.split("\n\n").find { |e| e.include?('{"choices"') }
      expect(broken).to eq(%(event: response.output_text.delta\ndata: {"choices": [{"delta": {"content": "x"))
      expect(reply.body).to include("event: response.completed")
    end

    it "error_event_after: N ends the stream with response.failed (server_error), cleanly" do
      fp.enqueue({ text: "a b c", error_event_after: 2 })
      reply = ask(stream: true)
      expect(reply.complete).to be(true)
      expect(deltas(reply)).to eq(["a ", "b "])
      type, data = reply.events.last
      expect(type).to eq("response.failed")
      expect(data["response"]["status"]).to eq("failed")
      expect(data["response"]["error"]["code"]).to eq("server_error")
    end

    it "no_terminal ends the body cleanly without response.completed" do
      fp.enqueue({ text: "a", no_terminal: true })
      reply = ask(stream: true)
      expect(reply.complete).to be(true)
      expect(reply.events.map(&:first).last).to eq("response.output_item.done")
    end

    it "answers canned errors in OpenAI's shape, with retry hints" do
      fp.enqueue({ error: :rate_limit, retry_after: 3 }, { error: :context_length })
      limited = ask
      expect(limited.status).to eq(429)
      expect(limited.headers["retry-after"]).to eq("3")
      expect(limited.json["error"]["code"]).to eq("rate_limit_exceeded")
      expect(ask.json["error"]["code"]).to eq("context_length_exceeded")
    end

    it "resets the connection before any byte" do
      fp.enqueue({ reset: true })
      expect(ask.complete).to be(false)
    end

    it "serves a recorded Responses stream byte for byte" do
      path = File.join(recorded, "chat_streaming_responses_openai_gpt-5-nano_supports_streaming_responses.json")
      fp.enqueue({ fixture: path })
      reply = ask(stream: true)
      expect(reply.body).to eq(fixture(File.basename(path)).dig("interactions", 0, "response", "body"))
    end
  end

  describe "the request log" do
    it "reads calls, results and attachments from input items" do
      png = ["\x89PNG".b].pack("m0")
      ask(input: [{ "role" => "user", "content" => [
                    { "type" => "input_text", "text" => "What are these?" },
                    { "type" => "input_image", "image_url" => "data:image/png;base64,#{png}", "detail" => "auto" },
                    { "type" => "input_file", "filename" => "a.pdf", "file_data" => "data:application/pdf;base64,JVBERi0=" },
                    { "type" => "input_file", "file_url" => "https://example.com/b.pdf" }
                  ] },
                  { "type" => "function_call", "call_id" => "call_1", "name" => "f", "arguments" => "{}" },
                  { "type" => "function_call_output", "call_id" => "call_1", "output" => "42" }])
      request = fp.requests.last
      expect(request.tool_calls.map { |c| [c.id, c.name] }).to eq([%w[call_1 f]])
      expect(request.tool_results.map { |r| [r.id, r.content] }).to eq([%w[call_1 42]])
      files = request.attachments
      expect(files.map(&:kind)).to eq(%i[image document document])
      expect([files[0].mime_type, files[0].data]).to eq(["image/png", "\x89PNG".b])
      expect([files[1].filename, files[1].data]).to eq(["a.pdf", "%PDF-"])
      expect(files[2].url).to eq("https://example.com/b.pdf")
    end

    it "calls the tool a request forces by the Responses API's tool_choice" do
      fp.enqueue({ tool_call: { "a" => 1 } })
      output = ask(tools: [{ "type" => "function", "name" => "pick", "parameters" => {} }],
                   tool_choice: { "type" => "function", "name" => "pick" }).json["output"]
      expect(output.map { |i| i.values_at("type", "name") }).to eq([%w[function_call pick]])
    end
  end

  describe "Azure" do
    let(:v1) { "#{fp.base_url(:azure)}/openai/v1" }

    def path(url)
      url.delete_prefix(fp.url)
    end

    it "answers the Responses API and chat completions under /openai/v1 with the key in api-key" do
      fp.enqueue({ text: "from Azure" }, { text: "chat" })
      reply = post("#{path(v1)}/responses", { "model" => "my-gpt-5", "input" => "Hi" }, headers: { "api-key" => "k" })
      expect(reply.status).to eq(200)
      expect(reply.json["output"][0]["content"][0]["text"]).to eq("from Azure")
      chat = post("#{path(v1)}/chat/completions", { "model" => "my-gpt-4o", "messages" => [{ "role" => "user", "content" => "Hi" }] },
                  headers: { "api-key" => "k" })
      expect(chat.json["choices"][0]["message"]["content"]).to eq("chat")
      expect(fp.requests.map { |r| [r.api, r.azure_layout, r.azure_credential] })
        .to eq([%i[responses v1 api_key], %i[openai v1 api_key]])
    end

    it "answers a request without api-key or a bearer token with Azure's 401, and spends no step" do
      fp.enqueue({ text: "kept" })
      reply = post("#{path(v1)}/responses", { "model" => "m", "input" => "Hi" }, headers: {})
      expect(reply.status).to eq(401)
      expect(reply.json["error"]["code"]).to eq("401")
      expect(reply.json["error"]["message"]).to start_with("Access denied due to invalid subscription key")
      expect(reply.headers).to include("apim-request-id")
      expect(fp.queue_size).to eq(1)
      bearer = post("#{path(v1)}/responses", { "model" => "m", "input" => "Hi" }, headers: { "Authorization" => "Bearer entra" })
      expect(bearer.status).to eq(200)
      expect(fp.requests.last.azure_credential).to eq(:bearer)
    end

    it "serves a deployment's chat completions with an api-version, and 404s one without" do
      dep = "#{path(fp.base_url(:azure))}/openai/deployments/gpt-4o%20mini/chat/completions"
      body = { "messages" => [{ "role" => "user", "content" => "Hi" }], "stream" => true }
      expect(post(dep, body, headers: { "api-key" => "k" }).status).to eq(404)
      reply = post("#{dep}?api-version=2024-10-21", body, headers: { "api-key" => "k" })
      expect(reply.status).to eq(200)
      expect(reply.body).to include("data: [DONE]")
      request = fp.requests.last
      expect([request.api, request.azure_layout, request.api_version, request.deployment])
        .to eq([:openai, :deployment, "2024-10-21", "gpt-4o mini"])
    end

    it "serves AI Foundry's /models/chat/completions and Azure's embeddings" do
      foundry = "#{path(fp.base_url(:azure_foundry))}/chat/completions?api-version=2024-05-01-preview"
      expect(fp.base_url(:azure_foundry)).to end_with("/models")
      chat = post(foundry, { "model" => "Phi-4", "messages" => [{ "role" => "user", "content" => "Hi" }] },
                  headers: { "api-key" => "k" })
      expect(chat.status).to eq(200)
      embed = post("#{path(v1)}/embeddings", { "model" => "emb", "input" => %w[a b] }, headers: { "api-key" => "k" })
      expect(embed.json["data"].size).to eq(2)
      expect(fp.requests.map(&:azure_layout)).to eq(%i[foundry v1])
    end

    it "gives a lane of its own to each Azure resource" do
      east = fp.on(:azure_east)
      east.enqueue({ error: :rate_limit })
      fp.enqueue({ text: "shared" })
      url = path("#{east.base_url(:azure)}/openai/v1/responses")
      expect(post(url, { "model" => "m", "input" => "Hi" }, headers: { "api-key" => "k" }).status).to eq(429)
      expect(post(url, { "model" => "m", "input" => "Hi" }, headers: { "api-key" => "k" }).status).to eq(200)
      expect(east.requests.map(&:azure_layout)).to eq(%i[v1 v1])
    end
  end
end
