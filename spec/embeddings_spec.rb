# frozen_string_literal: true

require "spec_helper"

RSpec.describe "LlmFailover.embed" do
  let(:primary) { start_fake_provider }
  let(:backup) { start_fake_provider }
  let(:records) { [] }
  let(:model) { "text-embedding-3-small" }

  before do
    LlmFailover.configure do |c|
      c.provider :openai, api: :openai, api_key: FakeProviderHelpers::PRIMARY_KEY, base_url: primary.base_url(:openai)
      c.provider :mistral, api: :openai, api_key: "mistral-SECRET789", base_url: backup.base_url(:openai)
      c.provider :anthropic, api: :anthropic, api_key: FakeProviderHelpers::BACKUP_KEY,
                             base_url: backup.base_url(:anthropic)
      c.usage_log = ->(r) { records << r }
      fast_policy(c)
    end
  end

  def dot(a, b)
    a.zip(b).sum { |x, y| x * y }
  end

  it "posts the texts to /embeddings and returns one vector per text, in order" do
    texts = ["the cat sat on the mat", "the cat sat", "quantum chromodynamics"]
    result = LlmFailover.embed(texts, model: model, provider: :openai, feature: "search")

    request = primary.requests.last
    expect(request.path).to eq("/v1/embeddings")
    expect(request.headers["authorization"]).to eq("Bearer #{FakeProviderHelpers::PRIMARY_KEY}")
    expect(request.json).to eq("model" => model, "input" => texts, "encoding_format" => "float")
    expect(result).to be_a(LlmFailover::Embeddings)
    expect(result.vectors.size).to eq(3)
    expect(result.vectors.map(&:size).uniq).to eq([LlmFailover::Testing::FakeProvider::EmbeddingAnswer::DIMENSIONS])
    # The provider's vectors, each in its text's place.
    texts.each_with_index do |text, i|
      expect(result.vectors[i]).to eq(LlmFailover::Testing::FakeProvider::EmbeddingAnswer.vector(text))
    end
    expect(dot(result.vectors[0], result.vectors[1])).to be > dot(result.vectors[0], result.vectors[2])
    expect([result.model, result.provider, result.tokens]).to eq([model, :openai, 11])
    expect(result.attempts.map { |a| [a.provider, a.model, a.success?, a.input_tokens, a.feature] })
      .to eq([[:openai, model, true, 11, "search"]])
    expect(records).to eq(result.attempts)
  end

  it "takes one text as a String" do
    result = LlmFailover.embed("hello there", model: model, provider: :openai)
    expect(result.vectors.size).to eq(1)
    expect(result.vector).to eq(result.vectors.first)
  end

  describe "with a scrubber configured, as a chat" do
    let(:card) { "4111 1111 1111 1111" }
    let(:other_card) { "5555 5555 5555 4444" }

    before { LlmFailover.configuration.scrubber = LlmFailover::Scrubber.default }

    it "sends each text scrubbed on its own, so a text's vector does not depend on its batch" do
      texts = ["refund card #{card}", "charge card #{other_card}", "no secret here"]
      result = LlmFailover.embed(texts, model: model, provider: :openai)
      alone = LlmFailover.embed(texts[1], model: model, provider: :openai)

      # What left the process: placeholders, never the numbers.
      sent = primary.requests.map { |r| r.json["input"] }
      expect(sent).to eq([["refund card [CARD_1]", "charge card [CARD_1]", "no secret here"],
                          ["charge card [CARD_1]"]])
      expect(primary.requests.map(&:body).join).not_to include("4111", "5555")
      expect(result.vectors[1]).to eq(alone.vector)
      # The records count what was replaced, never the values.
      expect(result.attempts.map(&:scrubbed)).to eq([{ "card" => 2 }])
      expect(alone.attempts.first.scrubbed).to eq({ "card" => 1 })
    end

    it "sends the texts as given with scrub: false, and refuses a scrub that is not a boolean" do
      result = LlmFailover.embed(["refund card #{card}"], model: model, provider: :openai, scrub: false)
      expect(primary.requests.last.json["input"]).to eq(["refund card #{card}"])
      expect(result.attempts.first.scrubbed).to be_nil
      expect { LlmFailover.embed("a", model: model, provider: :openai, scrub: nil) }
        .to raise_error(LlmFailover::ConfigurationError, /scrub must be true or false/)
    end
  end

  it "retries a server error as a chat call does, each attempt recorded" do
    primary.enqueue_embeddings({ error: :server })
    result = LlmFailover.embed(["a b"], model: model, provider: :openai)
    expect(result.attempts.map { |a| [a.success?, a.error_class, a.http_status] })
      .to eq([[false, "LlmFailover::ServerError", 500], [true, nil, 200]])
    expect(primary.requests.size).to eq(2)
    expect(result.failover?).to be(false)
  end

  it "fails over to the same model on the backup provider, never to another model" do
    LlmFailover.configuration.max_retries = 0
    primary.enqueue_embeddings({ error: :server })
    result = LlmFailover.embed(["a b"], model: model, provider: :openai, backup_provider: :mistral)
    expect([result.provider, result.failover?]).to eq([:mistral, true])
    expect(backup.requests.map { |r| [r.path, r.json["model"]] }).to eq([["/v1/embeddings", model]])
    expect(result.attempts.map { |a| [a.provider, a.model, a.success?] })
      .to eq([[:openai, model, false], [:mistral, model, true]])
  end

  it "refuses a provider that has no embeddings endpoint, before any request" do
    expect { LlmFailover.embed("a", model: model, provider: :openai, backup_provider: :anthropic) }
      .to raise_error(LlmFailover::ConfigurationError, /OpenAI-compatible/)
    expect(primary.request_count + backup.request_count).to eq(0)
  end

  it "takes an answer with a vector missing for an invalid response, retried, then raised with every attempt" do
    short = JSON.generate("data" => [{ "index" => 0, "embedding" => [0.1, 0.2] }], "model" => model)
    LlmFailover.configuration.max_retries = 1
    primary.enqueue_embeddings({ raw: short }, { raw: short })
    expect { LlmFailover.embed(%w[one two], model: model, provider: :openai) }
      .to raise_error(LlmFailover::InvalidResponseError) { |e|
        expect(e.message).to include("OpenAI embeddings")
        expect(e.attempts.size).to eq(2)
      }
  end

  it "redacts the keys from an error the provider echoes" do
    body = { "error" => { "message" => "bad key #{FakeProviderHelpers::PRIMARY_KEY}", "type" => "invalid_request_error" } }
    primary.enqueue_embeddings({ status: 400, body: body })
    expect { LlmFailover.embed("a", model: model, provider: :openai) }
      .to raise_error(LlmFailover::Error) { |e|
        expect(e.message).not_to include(FakeProviderHelpers::PRIMARY_KEY)
        expect(e.attempts.map(&:error_message).join).not_to include(FakeProviderHelpers::PRIMARY_KEY)
      }
  end

  it "holds the call's deadline" do
    LlmFailover.configure do |c|
      c.max_retries = 0
      c.request_timeout = 0.2
    end
    primary.enqueue_embeddings({ delay_headers: SpecTime.scaled(3) })
    expect { LlmFailover.embed("a", model: model, provider: :openai) }
      .to raise_error(LlmFailover::TimeoutError) { |e| expect(e.phase).to eq(:total) }
  end

  it "refuses no text or an empty one before any request" do
    expect { LlmFailover.embed([], model: model, provider: :openai) }.to raise_error(ArgumentError, /nothing to embed/)
    expect { LlmFailover.embed(["a", ""], model: model, provider: :openai) }.to raise_error(ArgumentError, /text 1/)
    expect(primary.request_count).to eq(0)
  end

  it "leaves a chat's scripted steps to the chat" do
    primary.enqueue({ text: "the chat's answer" })
    LlmFailover.embed("a", model: model, provider: :openai)
    expect(LlmFailover.chat(model: "gpt-4o", provider: :openai).ask("hi").content).to eq("the chat's answer")
  end
end
