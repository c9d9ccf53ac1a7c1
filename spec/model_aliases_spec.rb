# frozen_string_literal: true

require "spec_helper"

# models: on a provider: one logical model name, each host's own id. The request asks the
# host's id; the reply, the chunks, the attempt records and the circuits say the logical
# name; reply.response_model is what the host says answered.
RSpec.describe "Model aliases (models:)" do
  let(:fp) { start_fake_provider }
  let(:records) { [] }

  before do
    LlmFailover.configure do |c|
      c.provider :vertex, api: :vertex, project: "alias-spec", location: "us-east5", access_token: "ya29.alias-key",
                          base_url: fp.on(:vertex).base_url(:vertex),
                          models: { "claude-sonnet-4-5" => "claude-sonnet-4-5@20250929" }
      c.provider :anthropic, api: :anthropic, api_key: "sk-ant-alias-key", base_url: fp.on(:anthropic).base_url(:anthropic),
                             models: { "claude-sonnet-4-5" => "claude-sonnet-4-5-20250929" }
      c.max_retries = 0
      c.usage_log = ->(r) { records << r }
      fast_policy(c)
    end
  end

  let(:chat) do
    LlmFailover.chat(model: "claude-sonnet-4-5", provider: :vertex,
                     backup_model: "claude-sonnet-4-5", backup_provider: :anthropic)
  end

  it "asks each host for its own id and names the logical model everywhere else" do
    fp.on(:vertex).enqueue({ text: "a b c", cut_after: 1 })
    fp.on(:anthropic).enqueue({ text: "from Anthropic" })
    chunks = []
    reply = chat.ask("Hi") { |c| chunks << c }
    expect(fp.on(:vertex).requests.last.path).to end_with("/models/claude-sonnet-4-5@20250929:streamRawPredict")
    expect(fp.on(:anthropic).requests.last.json["model"]).to eq("claude-sonnet-4-5-20250929")
    expect([reply.model, reply.response_model, reply.provider])
      .to eq(["claude-sonnet-4-5", "claude-sonnet-4-5-20250929", :anthropic])
    expect(chunks.map(&:model).uniq).to eq(["claude-sonnet-4-5"])
    expect(records.map { |r| [r.provider, r.model] })
      .to eq([[:vertex, "claude-sonnet-4-5"], [:anthropic, "claude-sonnet-4-5"]])
    expect(LlmFailover.health.map { |h| h[:model] }.uniq).to eq(["claude-sonnet-4-5"])
  end

  it "stores the model the host says answered with the message" do
    fp.on(:vertex).enqueue({ text: "Hi", model: "claude-sonnet-4-5-20250929-vertex" })
    chat.ask("Hi")
    expect(chat.messages.last.model).to eq("claude-sonnet-4-5-20250929-vertex")
  end

  it "asks a model without an alias by its own name" do
    LlmFailover.chat(model: "claude-opus-4-1@20250805", provider: :vertex).ask("Hi")
    expect(fp.on(:vertex).requests.last.path).to end_with("/models/claude-opus-4-1@20250805:rawPredict")
  end

  it "refuses aliases that are not model names, before any request" do
    [{ "a" => "" }, { "" => "b" }, { a: "b" }, ["a"], { "a" => "b\n" }].each do |bad|
      expect { LlmFailover.configure { |c| c.provider :x, api: :openai, api_key: "k", models: bad } }
        .to raise_error(LlmFailover::ConfigurationError, /provider :x: models/)
    end
  end
end
