# frozen_string_literal: true

require "spec_helper"

RSpec.describe LlmFailover::Chat do
  include_context "with fake providers"

  describe "#ask" do
    it "answers without a block, unstreamed" do
      primary.enqueue({ text: "Hi there", usage: { input: 5, output: 2 } })
      reply = failover_chat.ask("Hello")
      expect(reply.content).to eq("Hi there")
      expect(reply.provider).to eq(:openai)
      expect(reply.model).to eq("gpt-4o")
      expect([reply.input_tokens, reply.output_tokens]).to eq([5, 2])
      expect(reply.failover?).to be(false)
      expect(reply.streamed?).to be(false)
      expect(reply.request_id).to match(/\A\h{8}-\h{4}-\h{4}-\h{4}-\h{12}\z/)
      expect(primary.requests.last.stream).to be(false)
      expect(sent_messages(primary.requests.last)).to eq([%w[user Hello]])
    end

    it "streams Chunks to a block" do
      primary.enqueue({ chunks: ["Hel", "lo ", "world"] })
      chunks, sink = collect_chunks
      reply = failover_chat.ask("Hi", &sink)
      expect(primary.requests.last.stream).to be(true)
      expect(chunks.map(&:content)).to eq(["Hel", "lo ", "world"])
      expect(chunks.map(&:index)).to eq([0, 1, 2])
      expect(chunks.none?(&:reset?)).to be(true)
      expect(chunks.map(&:provider).uniq).to eq([:openai])
      expect(chunks.map(&:model).uniq).to eq(["gpt-4o"])
      expect(chunks.map(&:request_id).uniq).to eq([reply.request_id])
      expect(reply.content).to eq("Hello world")
      expect(reply.streamed?).to be(true)
      expect(reply.chunk_count).to eq(3)
    end

    it "means by model the model asked of the target, on the Reply as on its chunks and records" do
      primary.enqueue({ chunks: %w[o k], model: "gpt-4o-2024-08-06" })
      chat = failover_chat
      chunks = []
      reply = chat.ask("Hi") { |c| chunks << c }
      expect(reply.model).to eq("gpt-4o")
      expect(chunks.map(&:model).uniq).to eq(["gpt-4o"])
      expect(reply.attempts.map(&:model)).to eq(["gpt-4o"])
      # What the provider says answered (a dated snapshot) is its own attribute.
      expect(reply.response_model).to eq("gpt-4o-2024-08-06")
      expect(chat.messages.last.model).to eq("gpt-4o-2024-08-06")
      expect(chat.messages.last.provider).to eq("openai")
    end

    it "names the backup's model on a Reply the backup gave" do
      primary.default = { error: :unavailable }
      backup.default = { text: "from the backup", model: "claude-sonnet-4-6-20250929" }
      reply = failover_chat(max_retries: 0).ask("Hi")
      expect([reply.provider, reply.model, reply.response_model])
        .to eq([:anthropic, "claude-sonnet-4-6", "claude-sonnet-4-6-20250929"])
      expect(reply.attempts.last.model).to eq(reply.model)
    end

    it "rejects an empty or non-String prompt before any request" do
      chat = failover_chat
      expect { chat.ask("") }.to raise_error(ArgumentError, /empty/)
      expect { chat.ask("  \n") }.to raise_error(ArgumentError, /empty/)
      expect { chat.ask("\t\r\v\f\0 ") }.to raise_error(ArgumentError, /empty/)
      expect { chat.ask(" \u00a0") }.not_to raise_error # strip keeps a no-break space, so does the check
      expect { chat.ask(nil) }.to raise_error(ArgumentError, /String/)
      expect { chat.ask(:hello) }.to raise_error(ArgumentError, /String/)
      expect(chat.messages.map(&:content).first).to eq(" \u00a0")
      expect(primary.request_count).to eq(1)
    end

    it "stores the user message and the answer with who produced it" do
      primary.enqueue({ text: "Four", usage: { input: 9, output: 1 } })
      chat = failover_chat
      chat.ask("2+2?")
      expect(chat.messages.map(&:role)).to eq(%w[user assistant])
      expect(chat.messages.map(&:content)).to eq(["2+2?", "Four"])
      expect(chat.messages.map(&:status)).to eq(%w[complete complete])
      assistant = chat.messages.last
      expect([assistant.model, assistant.provider, assistant.input_tokens, assistant.output_tokens])
        .to eq(["gpt-4o", "openai", 9, 1])
    end

    it "sends the whole conversation on the next turn" do
      primary.enqueue({ text: "Paris" }, { text: "About 2 million" })
      chat = failover_chat
      chat.ask("Capital of France?")
      chat.ask("Population?")
      expect(sent_messages(primary.requests.last))
        .to eq([["user", "Capital of France?"], %w[assistant Paris], %w[user Population?]])
    end

    it "passes temperature and max_tokens, per chat and per ask" do
      chat = failover_chat(temperature: 0.2, max_tokens: 50)
      chat.ask("one")
      first = primary.requests.last.json
      expect(first["temperature"]).to eq(0.2)
      expect(first["max_completion_tokens"] || first["max_tokens"]).to eq(50)

      chat.with_temperature(0.7).with_max_tokens(10).ask("two")
      second = primary.requests.last.json
      expect(second["temperature"]).to eq(0.7)
      expect(second["max_completion_tokens"] || second["max_tokens"]).to eq(10)

      chat.ask("three", temperature: 0, max_tokens: 5)
      third = primary.requests.last.json
      expect(third["temperature"]).to eq(0)
      expect(third["max_completion_tokens"] || third["max_tokens"]).to eq(5)
    end

    it "rejects a bad temperature or max_tokens before storing anything" do
      chat = failover_chat
      expect { chat.ask("x", temperature: "hot") }.to raise_error(ArgumentError, /temperature/)
      expect { chat.ask("x", max_tokens: 0) }.to raise_error(ArgumentError, /max_tokens/)
      expect(chat.messages).to be_empty
    end
  end

  describe "#with_instructions" do
    it "sends the instructions as the OpenAI system message" do
      chat = failover_chat.with_instructions("Be brief.")
      chat.ask("Hi")
      messages = sent_messages(primary.requests.last)
      expect(messages.first).to eq(["system", "Be brief."])
      expect(messages.last).to eq(%w[user Hi])
    end

    it "sends them as Anthropic's top-level system" do
      chat = LlmFailover.chat(model: "claude-sonnet-4-6", provider: :anthropic, system: "Be brief.")
      chat.ask("Hi")
      json = backup.requests.last.json
      system = json["system"].is_a?(Array) ? json["system"].map { |b| b["text"] }.join : json["system"]
      expect(system).to eq("Be brief.")
      expect(json["messages"].map { |m| m["role"] }).to eq(["user"])
    end

    it "sends several as they are stored: apart for OpenAI, joined into Anthropic's system" do
      chat = failover_chat.with_instructions("One.").with_instructions("Two.", replace: false)
      chat.ask("Hi")
      expect(sent_messages(primary.requests.last)).to eq([%w[system One.], %w[system Two.], %w[user Hi]])

      claude = LlmFailover.chat(model: "claude-sonnet-4-6", provider: :anthropic, system: "One.")
      claude.with_instructions("Two.", replace: false).ask("Hi")
      expect(backup.requests.last.json["system"]).to eq("One.\n\nTwo.")
      expect(sent_messages(backup.requests.last)).to eq([%w[user Hi]])
    end

    it "replaces by default and adds with replace: false" do
      chat = failover_chat.with_instructions("One.").with_instructions("Two.")
      expect(chat.messages.map(&:content)).to eq(["Two."])
      chat.with_instructions("Three.", replace: false)
      expect(chat.messages.map { |m| [m.role, m.content] }).to eq([%w[system Two.], %w[system Three.]])
    end
  end

  describe "#with_model" do
    it "keeps the messages and the backup and returns the chat" do
      primary.enqueue({ text: "first" }, { text: "second" })
      chat = failover_chat
      chat.ask("Hi")
      expect(chat.with_model("gpt-4o-mini", provider: :openai)).to be(chat)
      chat.ask("Again")
      expect(primary.requests.last.json["model"]).to eq("gpt-4o-mini")
      expect(sent_messages(primary.requests.last).map(&:last)).to eq(%w[Hi first Again])
      expect([chat.backup_model, chat.backup_provider]).to eq(["claude-sonnet-4-6", :anthropic])
    end

    it "moves the chat to another provider and drops the backup when asked" do
      chat = failover_chat.with_model("claude-haiku-4-5", provider: :anthropic, backup_model: nil, backup_provider: nil)
      expect(chat.backup?).to be(false)
      reply = chat.ask("Hi")
      expect(reply.provider).to eq(:anthropic)
      expect(backup.requests.last.json["model"]).to eq("claude-haiku-4-5")
      expect(primary.request_count).to eq(0)
    end

    it "validates the new target" do
      chat = failover_chat
      expect { chat.with_model("", provider: :openai) }.to raise_error(LlmFailover::ModelNotFoundError)
      expect { chat.with_model("m", provider: :nope) }.to raise_error(LlmFailover::ConfigurationError, /:openai/)
    end
  end

  describe "a failed call" do
    it "leaves the stored answer failed and naming the target whose error was final" do
      primary.enqueue({ error: :unavailable })
      backup.enqueue({ error: :unauthorized })
      chat = failover_chat(max_retries: 0)
      expect { chat.ask("Hello") }.to raise_error(LlmFailover::UnauthorizedError)
      failed = chat.messages.last
      expect([failed.role, failed.status, failed.model, failed.provider])
        .to eq(["assistant", "failed", "claude-sonnet-4-6", "anthropic"])
    end
  end

  describe "#complete" do
    it "answers from the stored messages without adding a user message" do
      primary.enqueue({ text: "one" }, { text: "two" })
      chat = failover_chat
      chat.ask("Count")
      chat.complete
      expect(chat.messages.map(&:role)).to eq(%w[user assistant assistant])
      expect(chat.messages.count { |m| m.role == "user" }).to eq(1)
    end

    it "refuses to call a provider with nothing to answer" do
      expect { failover_chat.complete }.to raise_error(ArgumentError, /nothing to answer/)
      expect(primary.request_count).to eq(0)
    end
  end

  describe "a custom store" do
    it "is driven through the interface, in order" do
      store = SpecListStore.new
      primary.enqueue({ chunks: ["a", "b"] })
      chat = failover_chat(store: store)
      expect(chat.store).to be(store)
      chat.ask("x") { |_| nil }
      expect(store.log).to eq([[:start, "openai"], [:append, "a"], [:append, "b"], [:finish, "openai"]])
      expect(chat.messages.last.content).to eq("ab")
    end
  end

  describe "#inspect" do
    it "is short and names the targets" do
      chat = failover_chat(feature: "summaries")
      expect(chat.inspect).to eq("#<LlmFailover::Chat openai/gpt-4o backup=anthropic/claude-sonnet-4-6 " \
                                 'feature="summaries" quota=nil store=LlmFailover::MemoryStore>')
    end
  end
end
