# frozen_string_literal: true

$LOAD_PATH.unshift File.expand_path("../../../../lib", __dir__)
require "llm_failover/testing"
require "support/tool_wire"

# The FakeProvider's tool calls, over real HTTP (Net::HTTP): every shape a tool loop
# must survive, in both protocols, streamed and not, held against the recordings of
# real providers (spec/fixtures/recorded/function_calling/). Plain Ruby only.
RSpec.describe LlmFailover::Testing::FakeProvider, "tool calls", :ruby_only do
  let(:fp) { described_class.start }

  after { fp.stop }

  def request_body(api, stream: false, messages: [{ "role" => "user", "content" => "Weather in Oslo?" }])
    body = { "model" => api == :anthropic ? "claude-haiku-4-5" : "gpt-4o-mini", "messages" => messages,
             "stream" => stream }
    body["max_tokens"] = 100 if api == :anthropic
    body
  end

  def ask(api, stream: false, **opts)
    ToolWire.post(fp.port, ToolWire::PATHS.fetch(api), request_body(api, stream: stream, **opts))
  end

  def answer(api, stream: false, **opts)
    res = ask(api, stream: stream, **opts)
    expect(res.status).to eq(200)
    ToolWire.read_answer(api, res.body, stream)
  end

  %i[openai anthropic].each do |api|
    [false, true].each do |stream|
      context "#{api}, #{stream ? 'streamed' : 'not streamed'}" do
        it "answers one call with its name and arguments, and the tool finish reason" do
          fp.enqueue({ tool_calls: [{ name: "weather", arguments: { "city" => "Oslo", "days" => [1, 2] } }] })
          got = answer(api, stream: stream)
          expect(got["calls"].size).to eq(1)
          expect(got["calls"][0]["name"]).to eq("weather")
          expect(JSON.parse(got["calls"][0]["arguments"])).to eq("city" => "Oslo", "days" => [1, 2])
          expect(got["calls"][0]["id"]).to start_with(api == :anthropic ? "toolu_" : "call_")
          expect(got["stop"]).to eq(api == :anthropic ? "tool_use" : "tool_calls")
          expect(got["text"]).to eq("")
        end

        it "answers several calls at once, parallel and of one tool, in order with distinct ids" do
          fp.enqueue({ tool_calls: [{ name: "weather", arguments: { "city" => "Oslo" } },
                                    { name: "dice_roll" }, { name: "dice_roll", arguments: {} }] })
          got = answer(api, stream: stream)
          expect(got["calls"].map { |c| c["name"] }).to eq(%w[weather dice_roll dice_roll])
          expect(got["calls"].map { |c| c["arguments"].empty? ? {} : JSON.parse(c["arguments"]) })
            .to eq([{ "city" => "Oslo" }, {}, {}])
          expect(got["calls"].map { |c| c["id"] }.uniq.size).to eq(3)
          expect(got["stop"]).to eq(api == :anthropic ? "tool_use" : "tool_calls")
        end

        it "puts the text a model says first before its calls" do
          fp.enqueue({ text: "Let me look that up.", tool_calls: [{ name: "weather", arguments: { "city" => "Oslo" } }] })
          got = answer(api, stream: stream)
          expect(got["text"]).to eq("Let me look that up.")
          expect(got["calls"].map { |c| c["name"] }).to eq(["weather"])
        end

        it "keeps given ids, unknown tool names and arguments that are not JSON exactly as scripted" do
          fp.enqueue({ tool_calls: [{ name: "no_such_tool", id: "g6fVbXS8K", arguments: '{"city": "Os' },
                                    { name: "weather", id: "call_00_MRi7F2sf", arguments: "[1, 2]" }] })
          got = answer(api, stream: stream)
          expect(got["calls"][0]).to eq("id" => "g6fVbXS8K", "name" => "no_such_tool", "arguments" => '{"city": "Os')
          expect(got["calls"][1]).to include("id" => "call_00_MRi7F2sf", "name" => "weather")
          # Anthropic's unstreamed input is a JSON value, not text: the same value, maybe respaced.
          expect(JSON.parse(got["calls"][1]["arguments"])).to eq([1, 2])
        end
      end
    end

    context "#{api}, streamed fragments and faults" do
      it "streams a call's arguments in the scripted pieces, each its own event" do
        pieces = ['{"ci', 'ty": "Os', 'lo"}']
        fp.enqueue({ tool_calls: [{ name: "weather", chunks: pieces }] })
        res = ask(api, stream: true)
        events = ToolWire.sse(res.body).map(&:json).compact
        sent = if api == :anthropic
                 events.select { |e| e.dig("delta", "type") == "input_json_delta" }.map { |e| e.dig("delta", "partial_json") }
               else
                 events.flat_map { |e| e["choices"] }.flat_map { |c| c.dig("delta", "tool_calls") || [] }
                       .map { |t| t.dig("function", "arguments") }
               end
        # Both protocols open a call with an empty piece, as the recordings show.
        expect(sent).to eq([""] + pieces)
      end

      it "cuts the stream inside the second call's arguments: no terminal event, the call half there" do
        fp.enqueue({ tool_calls: [{ name: "weather", chunks: ['{"city":', '"Oslo"}'] },
                                  { name: "clock", chunks: ['{"tz":', '"Europe/Oslo"}'] }],
                     cut_after: api == :anthropic ? 5 : 3 }) # Anthropic opens each call with an empty piece
        res = ask(api, stream: true)
        expect(res.complete).to be(false)
        got = ToolWire.read_answer(api, res.body, true)
        expect(got["stop"]).to be_nil
        expect(got["calls"].map { |c| c["name"] }).to eq(%w[weather clock])
        expect(JSON.parse(got["calls"][0]["arguments"])).to eq("city" => "Oslo")
        expect(got["calls"][1]["arguments"]).to eq('{"tz":')
        expect { JSON.parse(got["calls"][1]["arguments"]) }.to raise_error(JSON::ParserError)
        names = ToolWire.sse(res.body).map { |e| api == :anthropic ? e.name : e.data }
        expect(names).not_to include(api == :anthropic ? "message_stop" : "[DONE]")
      end

      it "sends an in-stream error event in the middle of a call" do
        fp.enqueue({ tool_calls: [{ name: "weather", chunks: ['{"city":', '"Oslo"}'] }], error_event_after: 1 })
        res = ask(api, stream: true)
        events = ToolWire.sse(res.body).map(&:json).compact
        expect(events.last).to include("error")
        expect(ToolWire.read_answer(api, res.body, true)["stop"]).to be_nil
      end
    end
  end

  it "answers forced tool_call: steps as before, now opening the call as the recordings do" do
    fp.enqueue({ tool_call: { "a" => 1 } })
    body = request_body(:openai, stream: true)
    body["tool_choice"] = { "type" => "function", "function" => { "name" => "lookup" } }
    got = ToolWire.read_answer(:openai, ToolWire.post(fp.port, ToolWire::PATHS[:openai], body).body, true)
    expect(got["calls"].map { |c| [c["name"], JSON.parse(c["arguments"])] }).to eq([["lookup", { "a" => 1 }]])
  end

  it "refuses bad tool_calls: entries when they are enqueued" do
    expect { fp.enqueue({ tool_calls: [] }) }.to raise_error(ArgumentError, /tool_calls/)
    expect { fp.enqueue({ tool_calls: [{ arguments: {} }] }) }.to raise_error(ArgumentError, /tool_calls\[0\]: name/)
    expect { fp.enqueue({ tool_calls: [{ name: "a", argz: {} }] }) }.to raise_error(ArgumentError, /unknown key :argz/)
    expect { fp.enqueue({ tool_calls: [{ name: "a", arguments: 5 }] }) }.to raise_error(ArgumentError, /arguments/)
    expect { fp.enqueue({ tool_calls: [{ name: "a" }], tool_call: {} }) }.to raise_error(ArgumentError, /one of/)
    expect { fp.enqueue({ tool_calls: [{ name: "a" }], tool_name: "b" }) }.to raise_error(ArgumentError, /name:\), not with tool_name/)
    expect(fp.queue_size).to eq(0)
  end

  describe "the recorded shapes" do
    # Per protocol, the first answer of every streamed recording that made tool calls.
    def recorded_tool_streams(api)
      ToolWire.recordings.filter_map do |rec|
        first = rec["interactions"][0]
        next unless first["request"]["api"] == api.to_s && JSON.parse(first["request"]["body"])["stream"]

        calls = ToolWire.read_answer(api, first["response"]["body"], true)["calls"]
        calls.empty? ? nil : [rec["file"], first["response"]["body"]]
      end
    end

    it "streams Anthropic tool calls in the recorded event order, with only recorded keys" do
      recorded = recorded_tool_streams(:anthropic)
      expect(recorded.size).to be >= 4
      shape = /\Amessage_start content_block_start ping (content_block_delta )+content_block_stop message_delta message_stop\z/
      recorded_paths = Hash.new { |h, k| h[k] = Set.new }
      recorded.each do |file, body|
        events = ToolWire.sse(body)
        expect(events.map(&:name).join(" ")).to match(shape), file
        events.each { |e| ToolWire.key_paths(e.json, "", recorded_paths[e.name]) }
      end

      fp.enqueue({ tool_calls: [{ name: "weather", arguments: { "latitude" => "52.5200", "longitude" => "13.4050" } }] })
      events = ToolWire.sse(ask(:anthropic, stream: true).body)
      expect(events.map(&:name).join(" ")).to match(shape)
      events.each do |e|
        expect(ToolWire.key_paths(e.json) - recorded_paths[e.name]).to be_empty, "#{e.name} has keys no recording has"
      end
    end

    it "streams OpenAI tool calls with only the keys the recordings use, opening each call as they do" do
      recorded = recorded_tool_streams(:openai)
      expect(recorded.size).to be >= 4
      recorded_paths = Set.new
      recorded.each do |_file, body|
        ToolWire.sse(body).each { |e| ToolWire.key_paths(e.json, "", recorded_paths) unless e.data == "[DONE]" }
      end
      fp.enqueue({ tool_calls: [{ name: "weather", arguments: { "latitude" => "52.5200" } }, { name: "clock" }] })
      events = ToolWire.sse(ask(:openai, stream: true).body)
      paths = Set.new
      events.each { |e| ToolWire.key_paths(e.json, "", paths) unless e.data == "[DONE]" }
      expect(paths - recorded_paths).to be_empty
      openers = events.filter_map(&:json).flat_map { |e| e["choices"] }
                      .flat_map { |c| c.dig("delta", "tool_calls") || [] }.select { |t| t.key?("id") }
      expect(openers.map { |t| t["function"] }).to eq([{ "name" => "weather", "arguments" => "" },
                                                      { "name" => "clock", "arguments" => "" }])
      expect(events.last.data).to eq("[DONE]")
    end

    it "answers unstreamed with only the keys the recordings use, in both protocols" do
      %i[openai anthropic].each do |api|
        recorded_paths = Set.new
        ToolWire.recordings.each do |rec|
          rec["interactions"].each do |i|
            next unless i["request"]["api"] == api.to_s && !JSON.parse(i["request"]["body"])["stream"]

            ToolWire.key_paths(JSON.parse(i["response"]["body"]), "", recorded_paths)
          end
        end
        fp.enqueue({ text: "Looking.", tool_calls: [{ name: "weather", arguments: { "latitude" => "52.5200" } }] })
        got = ToolWire.key_paths(JSON.parse(ask(api).body))
        # logprobs is on OpenAI's every answer; the tool recordings happen to come from APIs without it.
        expect(got - recorded_paths - ["choices[].logprobs"]).to be_empty, api.to_s
      end
    end
  end

  describe "strict_transcript" do
    let(:fp) { described_class.start(strict_transcript: true) }

    # Every request a real provider accepted, from every tool recording.
    def recorded_requests
      ToolWire.recordings.flat_map do |rec|
        rec["interactions"].map { |i| [rec["file"], i["request"]["api"].to_sym, JSON.parse(i["request"]["body"])] }
      end
    end

    def post(api, body)
      ToolWire.post(fp.port, ToolWire::PATHS.fetch(api), body)
    end

    def error_of(res)
      JSON.parse(res.body)["error"]
    end

    it "accepts every transcript a real provider accepted, and answers it from the script" do
      requests = recorded_requests
      expect(requests.map { |r| r[1] }.uniq.sort).to eq(%i[anthropic openai])
      with_results = requests.count { |_f, api, body| !LlmFailover::Testing::FakeProvider::Transcript.new(api, body).results.empty? }
      expect(with_results).to be >= 30
      requests.each do |file, api, body|
        body = body.merge("stream" => false)
        expect(post(api, body).status).to eq(200), file
      end
      expect(fp.request_count).to eq(requests.size)
    end

    it "refuses an Anthropic tool_use without its tool_result in the next message, taking no step" do
      _f, _api, body = recorded_requests.find { |f, api, b| api == :anthropic && f.include?("parallel") && b["messages"].size == 3 }
      broken = JSON.parse(JSON.generate(body))
      results = broken["messages"][2]["content"]
      dropped = results.pop["tool_use_id"]
      fp.enqueue({ text: "scripted" })
      res = post(:anthropic, broken)
      expect(res.status).to eq(400)
      doc = JSON.parse(res.body)
      expect(doc["type"]).to eq("error")
      expect(doc["error"]["type"]).to eq("invalid_request_error")
      expect(doc["error"]["message"]).to eq(
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: #{dropped}. " \
        "Each `tool_use` block must have a corresponding `tool_result` block in the next message."
      )
      expect(fp.queue_size).to eq(1)
      expect(fp.requests.last.tool_results.size).to eq(1)
    end

    it "refuses an Anthropic tool_result whose call is not in the previous message, or a second result" do
      _f, _api, body = recorded_requests.find { |f, api, b| api == :anthropic && f.include?("parallel") && b["messages"].size == 3 }
      orphan = JSON.parse(JSON.generate(body))
      orphan["messages"][1]["content"].shift # the call goes, its result stays
      res = post(:anthropic, orphan)
      expect(res.status).to eq(400)
      expect(error_of(res)["message"]).to match(/\Amessages\.2\.content\.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_\w+\. /)

      twice = JSON.parse(JSON.generate(body))
      twice["messages"][2]["content"] << twice["messages"][2]["content"][0]
      res = post(:anthropic, twice)
      expect(res.status).to eq(400)
      expect(error_of(res)["message"]).to match(/\Amessages\.2\.content\.2: each tool_use must have a single result/)

      late = JSON.parse(JSON.generate(body))
      late["messages"].insert(2, { "role" => "user", "content" => "and?" }, { "role" => "assistant", "content" => "Hm." })
      expect(error_of(post(:anthropic, late))["message"]).to start_with("messages.1: `tool_use` ids were found without")
    end

    it "refuses OpenAI tool_calls without a tool message for each id, and a tool message without its call" do
      _f, _api, body = recorded_requests.find { |f, api, b| api == :openai && f.include?("gpt-5-nano_can_use_parallel") && b["messages"].size == 4 }
      missing = JSON.parse(JSON.generate(body))
      dropped = missing["messages"].pop["tool_call_id"]
      res = post(:openai, missing)
      expect(res.status).to eq(400)
      expect(error_of(res)).to eq(
        "message" => "An assistant message with 'tool_calls' must be followed by tool messages responding to each " \
                     "'tool_call_id'. The following tool_call_ids did not have response messages: #{dropped}",
        "type" => "invalid_request_error", "param" => "messages.[1].role", "code" => nil
      )

      orphan = JSON.parse(JSON.generate(body))
      orphan["messages"].delete_at(1)
      res = post(:openai, orphan)
      expect(error_of(res)).to include("param" => "messages.[1].role",
                                       "message" => "Invalid parameter: messages with role 'tool' must be a response " \
                                                    "to a preceeding message with 'tool_calls'.")

      stranger = JSON.parse(JSON.generate(body))
      stranger["messages"][3]["tool_call_id"] = "call_nobody"
      expect(error_of(post(:openai, stranger))["message"])
        .to eq("Invalid parameter: 'tool_call_id' of 'call_nobody' not found in 'tool_calls' of previous message.")
      expect(fp.queue_size).to eq(0)
      expect(fp.request_count).to eq(3)
    end

    it "refuses a call id the provider would not take: Anthropic's pattern, OpenAI's length" do
      anthropic = request_body(:anthropic, messages: [
                                 { "role" => "user", "content" => "Go" },
                                 { "role" => "assistant", "content" => [{ "type" => "tool_use", "id" => "call.1", "name" => "a", "input" => {} }] },
                                 { "role" => "user", "content" => [{ "type" => "tool_result", "tool_use_id" => "call.1", "content" => "x" }] }
                               ])
      res = post(:anthropic, anthropic)
      expect(res.status).to eq(400)
      expect(error_of(res)["message"]).to eq("messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'")

      long = "call_#{'x' * 40}"
      openai = request_body(:openai, messages: [
                              { "role" => "user", "content" => "Go" },
                              { "role" => "assistant", "content" => nil,
                                "tool_calls" => [{ "id" => long, "type" => "function", "function" => { "name" => "a", "arguments" => "{}" } }] },
                              { "role" => "tool", "tool_call_id" => long, "content" => "x" }
                            ])
      res = post(:openai, openai)
      expect(res.status).to eq(400)
      expect(error_of(res)).to eq("message" => "Invalid 'messages[1].tool_calls[0].id': string too long. Expected a string " \
                                               "with maximum length 40, but got a string with length 45 instead.",
                                  "type" => "invalid_request_error", "param" => "messages[1].tool_calls[0].id",
                                  "code" => "string_above_max_length")
      # The same transcripts with ids each provider takes go through.
      ok = JSON.parse(JSON.generate(anthropic).gsub("call.1", "call_1"))
      expect(post(:anthropic, ok).status).to eq(200)
      expect(post(:openai, JSON.parse(JSON.generate(openai).gsub(long, "call_1"))).status).to eq(200)
    end

    it "lets a broken transcript through when strict_transcript is off" do
      fp.strict_transcript = false
      body = request_body(:openai, messages: [{ "role" => "tool", "tool_call_id" => "x", "content" => "1" }])
      expect(post(:openai, body).status).to eq(200)
      expect { fp.strict_transcript = :yes }.to raise_error(ArgumentError, /true or false/)
    end
  end

  it "lists the tool calls and results a request carries, in both protocols" do
    ToolWire.recordings.select { |r| r["file"].include?("can_use_parallel_tool_calls.json") }.each do |rec|
      interaction = rec["interactions"][1]
      api = interaction["request"]["api"].to_sym
      ToolWire.post(fp.port, ToolWire::PATHS.fetch(api), interaction["request"]["body"])
      req = fp.requests.last
      expect(req.tool_calls.map(&:name)).to eq(%w[weather best_language_to_learn]), rec["file"]
      expect(req.tool_results.map(&:id)).to eq(req.tool_calls.map(&:id))
      expect(req.tool_results.map(&:content).last).to eq("Ruby")
    end
  end
end
