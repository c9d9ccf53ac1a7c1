# frozen_string_literal: true

$LOAD_PATH.unshift File.expand_path("../../../../lib", __dir__)
require "llm_failover/testing"
require "json"
require "net/http"

# Reasoning state across the FakeProvider's protocols and lanes, over real HTTP: the
# Responses API's encrypted_content and Gemini's thoughtSignature go back only to the
# protocol and the lane (the provider) that made them, as the core sends them
# (lf_wire_reasoning_goes); a strict FakeProvider refuses them anywhere else, each in its
# host's own words.
RSpec.describe LlmFailover::Testing::FakeProvider, "reasoning state", :ruby_only do
  let(:fp) { described_class.start(strict_transcript: true) }

  after { fp.stop }

  def post(path, body)
    Net::HTTP.start("127.0.0.1", fp.port, read_timeout: 5) do |http|
      req = Net::HTTP::Post.new(path, "Content-Type" => "application/json", "Authorization" => "Bearer test")
      req.body = JSON.generate(body)
      res = http.request(req)
      [res.code.to_i, JSON.parse(res.body)]
    end
  end

  def path(lane, api)
    fp.on(lane).base_url(api).delete_prefix(fp.url)
  end

  # A Responses turn that sends back a reasoning item with +secret+ before its call.
  def responses_turn(secret)
    { "model" => "gpt-5", "store" => false,
      "input" => [{ "role" => "user", "content" => "Weather?" },
                  { "type" => "reasoning", "summary" => [], "encrypted_content" => secret },
                  { "type" => "function_call", "call_id" => "call_1", "name" => "weather", "arguments" => "{}" },
                  { "type" => "function_call_output", "call_id" => "call_1", "output" => "sunny" }] }
  end

  # A Gemini turn whose call carries +signature+.
  def gemini_turn(signature)
    { "contents" => [{ "role" => "user", "parts" => [{ "text" => "Weather?" }] },
                     { "role" => "model", "parts" => [{ "functionCall" => { "name" => "weather", "args" => {} },
                                                        "thoughtSignature" => signature }] },
                     { "role" => "user", "parts" => [{ "functionResponse" => { "name" => "weather",
                                                                                "response" => { "output" => "sunny" } } }] }] }
  end

  def reasoning_of(lane)
    fp.on(lane).enqueue({ thinking: "Look it up.", tool_calls: [{ name: "weather" }] })
    _, body = post("#{path(lane, :responses)}/responses", { "model" => "gpt-5", "input" => "Weather?" })
    body["output"].find { |item| item["type"] == "reasoning" }["encrypted_content"]
  end

  def signature_of(lane)
    fp.on(lane).enqueue({ tool_calls: [{ name: "weather" }] })
    _, body = post("#{path(lane, :gemini)}/v1beta/models/gemini-2.5-flash:generateContent",
                   { "contents" => [{ "role" => "user", "parts" => [{ "text" => "Weather?" }] }] })
    body["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
  end

  it "names the protocol and the lane that made each piece, opaque to the client" do
    contents = described_class::SealedState.read(reasoning_of(:openai))
    expect([contents.api, contents.lane, contents.final]).to eq([:responses, "openai", true])
    contents = described_class::SealedState.read(signature_of(:google))
    expect([contents.api, contents.lane, contents.final]).to eq([:gemini, "google", true])
    expect(described_class::SealedState.read("skip_thought_signature_validator")).to be_nil
  end

  it "takes a reasoning item back from the lane that made it, and refuses it from another" do
    secret = reasoning_of(:openai)
    expect(post("#{path(:openai, :responses)}/responses", responses_turn(secret)).first).to eq(200)
    status, body = post("#{path(:azure_east, :responses)}/responses", responses_turn(secret))
    expect([status, body["error"]["code"]]).to eq([400, "invalid_encrypted_content"])
  end

  it "refuses one protocol's state in the other's, on the same lane" do
    secret = reasoning_of(:shared)
    signature = signature_of(:shared)
    status, body = post("#{path(:shared, :gemini)}/v1beta/models/gemini-2.5-flash:generateContent", gemini_turn(secret))
    expect([status, body["error"]["message"]]).to eq([400, "Corrupted thought signature."])
    status, body = post("#{path(:shared, :responses)}/responses", responses_turn(signature))
    expect([status, body["error"]["code"]]).to eq([400, "invalid_encrypted_content"])
    expect(post("#{path(:shared, :gemini)}/v1beta/models/gemini-2.5-flash:generateContent",
                gemini_turn(signature)).first).to eq(200)
  end
end
