# frozen_string_literal: true

require_relative "../../active_record/ar_spec_helper"

ArSpec.describe "acts_as_llm_chat" do
  include_context "with fake providers"

  def create_chat(klass = Chat, **attrs)
    klass.create!(model: "gpt-4o", provider: "openai", backup_model: "claude-sonnet-4-6",
                  backup_provider: "anthropic", **attrs)
  end

  def rows(chat)
    Message.where(chat_id: chat.id).order(:id).to_a
  end

  describe "#ask" do
    it "writes the user row once and a complete assistant row naming who answered" do
      LlmFailover.configuration.max_retries = 2
      primary.enqueue({ error: :server }, { error: :server }, { text: "Fine, thanks", usage: { input: 12, output: 3 } })
      chat = create_chat
      reply = chat.ask("How are you?")

      expect(primary.request_count).to eq(3)
      expect(rows(chat).map { |m| [m.role, m.content, m.status] })
        .to eq([["user", "How are you?", "complete"], ["assistant", "Fine, thanks", "complete"]])
      answer = rows(chat).last
      expect([answer.model, answer.provider, answer.input_tokens, answer.output_tokens])
        .to eq(["gpt-4o", "openai", 12, 3])
      expect(reply.content).to eq("Fine, thanks")
      expect(reply.provider).to eq(:openai)
    end

    it "sends the stored conversation on the next turn, system message first" do
      primary.enqueue({ text: "Paris" }, { text: "About 2 million" })
      chat = create_chat.with_instructions("Answer briefly.")
      chat.ask("Capital of France?")
      Chat.find(chat.id).ask("Population?")

      last = primary.requests.last.json["messages"].map { |m| [m["role"], m["content"]] }
      expect(last).to eq([%w[system Answer\ briefly.], ["user", "Capital of France?"], %w[assistant Paris],
                          %w[user Population?]])
      expect(rows(chat).map(&:role)).to eq(%w[system user assistant user assistant])
    end

    it "saves a new record before writing its messages" do
      chat = Chat.new(model: "gpt-4o", provider: "openai")
      chat.ask("Hi")
      expect(chat).to be_persisted
      expect(rows(chat).map(&:role)).to eq(%w[user assistant])
    end

    it "keeps the assistant row out of later turns when the block raises" do
      primary.enqueue({ text: "one two three" }, { text: "again" })
      chat = create_chat
      expect { chat.ask("Hi") { |_c| raise "screen closed" } }.to raise_error(RuntimeError, "screen closed")
      expect(rows(chat).map { |m| [m.role, m.status] }).to eq([%w[user complete], %w[assistant failed]])

      Chat.find(chat.id).complete
      expect(sent_messages(primary.requests.last)).to eq([%w[user Hi]])
    end
  end

  # Issue 15, probe 2: nothing stored that the next call would refuse or garble.
  describe "text in other encodings" do
    it "stores and sends Latin-1 as UTF-8, and refuses invalid bytes before any row" do
      chat = create_chat.with_instructions("Réponds.".encode("ISO-8859-1"))
      expect { chat.ask("caf\xE9") }
        .to raise_error(ArgumentError, "invalid UTF-8 in the prompt: byte 0xE9 at byte offset 3")
      expect { chat.with_instructions("\xFF", replace: false) }.to raise_error(ArgumentError, /byte offset 0/)
      chat.ask("café".encode("UTF-16"))
      expect(rows(chat).map { |m| [m.role, m.content] })
        .to eq([%w[system Réponds.], %w[user café], ["assistant", LlmFailover::Testing::FakeProvider::DEFAULT_TEXT]])
      expect(sent_messages(primary.requests.last)).to eq([%w[system Réponds.], %w[user café]])
    end
  end

  describe "the reset rule, read back from the database" do
    it "empties the row in the database before the backup's first chunk, and keeps only the winner" do
      primary.enqueue({ chunks: ["one ", "two ", "three ", "four"], cut_after: 2 })
      backup.enqueue({ chunks: ["Backup ", "answer"] })
      chat = create_chat(EagerChat)
      seen = []
      chat.ask("Count") do |chunk|
        id = Message.where(chat_id: chat.id, role: "assistant").pick(:id)
        row = raw_message(id)
        seen << [chunk.reset? ? :reset : chunk.content, row["content"], row["provider"], row["status"]]
      end

      expect(seen).to eq([["one ", "one ", "openai", "streaming"],
                          ["two ", "one two ", "openai", "streaming"],
                          [:reset, "", "anthropic", "streaming"],
                          ["Backup ", "Backup ", "anthropic", "streaming"],
                          ["answer", "Backup answer", "anthropic", "streaming"]])
      assistant = raw_rows("SELECT * FROM messages WHERE chat_id = ? AND role = 'assistant'", chat.id)
      expect(assistant.size).to eq(1)
      expect(assistant.first.values_at("content", "model", "provider", "status"))
        .to eq(["Backup answer", "claude-sonnet-4-6", "anthropic", "complete"])
      expect(raw_rows("SELECT COUNT(*) AS n FROM messages WHERE chat_id = ? AND role = 'user'", chat.id).first["n"])
        .to eq(1)
    end

    it "writes the reset at once even when deltas are only written at the end" do
      primary.enqueue({ chunks: ["one ", "two ", "three"], cut_after: 2 })
      backup.enqueue({ chunks: ["B1 ", "B2"] })
      chat = create_chat(LazyChat)
      seen = []
      statements = sql_during do
        chat.ask("Count") do |chunk|
          id = Message.where(chat_id: chat.id, role: "assistant").pick(:id)
          row = raw_message(id)
          seen << [chunk.reset? ? :reset : chunk.content, row["content"], row["provider"]]
        end
      end

      # Nothing streamed reached the database; the reset's new target did, at once.
      expect(seen).to eq([["one ", "", "openai"], ["two ", "", "openai"], [:reset, "", "anthropic"],
                          ["B1 ", "", "anthropic"], ["B2", "", "anthropic"]])
      expect(rows(chat).last.content).to eq("B1 B2")
      updates = statements.grep(/\AUPDATE "messages"/)
      expect(updates.size).to eq(2) # the reset, the finish
    end

    it "costs one write per delta only when asked to (flush_interval 0)" do
      chunks = Array.new(20) { |i| "w#{i} " }
      primary.enqueue({ chunks: chunks })
      eager = sql_during { create_chat(EagerChat).ask("Go") { |_c| } }.grep(/\AUPDATE "messages"/)
      primary.enqueue({ chunks: chunks })
      lazy = sql_during { create_chat(LazyChat).ask("Go") { |_c| } }.grep(/\AUPDATE "messages"/)

      expect(eager.size).to eq(21) # every delta, then the finish
      expect(lazy.size).to eq(1)
      expect(Message.where(role: "assistant").pluck(:content).uniq).to eq([chunks.join])
    end
  end

  describe "after a failure" do
    it "leaves a failed row that no later turn sends, and complete on a reloaded record answers the same turn" do
      LlmFailover.configuration.max_retries = 0
      primary.enqueue({ chunks: ["partial ", "answer ", "lost"], cut_after: 2 }, { text: "Second try" })
      chat = Chat.create!(model: "gpt-4o", provider: "openai") # no backup
      expect { chat.ask("Question?") { |_c| } }.to raise_error(LlmFailover::StreamInterruptedError)

      expect(rows(chat).map { |m| [m.role, m.content, m.status] })
        .to eq([["user", "Question?", "complete"], ["assistant", "partial answer ", "failed"]])
      reloaded = Chat.find(chat.id)
      expect(reloaded.answer_pending?).to be(true)

      reply = reloaded.complete
      expect(reply.content).to eq("Second try")
      expect(sent_messages(primary.requests.last)).to eq([%w[user Question?]])
      # The failed row became the answer: one turn, one assistant row (issue 27, item 6).
      expect(rows(chat).map { |m| [m.role, m.content, m.status] })
        .to eq([["user", "Question?", "complete"], ["assistant", "Second try", "complete"]])
      expect(reloaded.answer_pending?).to be(false)

      primary.enqueue({ text: "Third" })
      reloaded.ask("Next?")
      expect(sent_messages(primary.requests.last))
        .to eq([%w[user Question?], ["assistant", "Second try"], %w[user Next?]])
    end

    it "never sends a row a dead process left streaming" do
      chat = create_chat
      Message.create!(chat: chat, role: "user", content: "Before the crash")
      Message.create!(chat: chat, role: "assistant", content: "half an ans", status: "streaming",
                      model: "gpt-4o", provider: "openai")
      primary.enqueue({ text: "Answered" })
      Chat.find(chat.id).complete
      expect(sent_messages(primary.requests.last)).to eq([["user", "Before the crash"]])
    end

    it "marks the row failed when neither target answers, and the error names the last one" do
      LlmFailover.configuration.max_retries = 0
      primary.enqueue({ error: :unavailable })
      backup.enqueue({ error: :overloaded })
      chat = create_chat
      expect { chat.ask("Hi") }.to raise_error(LlmFailover::OverloadedError) { |e| expect(e.provider).to eq(:anthropic) }
      expect(rows(chat).map { |m| [m.role, m.status] }).to eq([%w[user complete], %w[assistant failed]])
      expect(chat.to_llm.store.conversation.map(&:role)).to eq(%w[user])
    end
  end

  # Issue 27, item 2: whatever a plain chat does, a record does, with the same names.
  describe "the plain chat's API on a record" do
    let(:schema) do
      { type: "object", additionalProperties: false, required: %w[city days],
        properties: { city: { type: "string" }, days: { type: "array", items: { type: "integer" } } } }
    end
    let(:paris) { { "city" => "Paris", "days" => [1, 2] } }

    it "answers with_schema on every call of the record, reloaded or not, and stores the JSON text" do
      primary.enqueue({ json: paris }, { json: paris })
      chat = create_chat(backup_model: nil, backup_provider: nil)
      expect(chat.with_schema(schema, name: "trip")).to equal(chat)
      expect(chat.answer_format).to be_a(LlmFailover::AnswerFormat)

      reply = chat.ask("Plan a trip")
      expect(reply.json).to eq(paris)
      format = primary.requests.last.json["response_format"]
      expect(format["type"]).to eq("json_schema")
      expect(format["json_schema"]).to include("name" => "trip", "strict" => true)
      expect(JSON.parse(rows(chat).last.content)).to eq(paris)

      expect(chat.complete.json).to eq(paris) # the setting stays with the record, as with a chat
      expect(primary.requests.last.json["response_format"]["type"]).to eq("json_schema")
      expect(chat.with_schema(nil).answer_format).to be_nil
    end

    it "refuses a schema strict mode would refuse at once, as a chat does" do
      chat = create_chat
      expect { chat.with_schema({ type: "object", properties: { a: { type: "string" } } }) }
        .to raise_error(ArgumentError, /additionalProperties/)
      expect { chat.with_temperature(-1) }.to raise_error(ArgumentError, /temperature/)
      expect(chat.answer_format).to be_nil
    end

    it "answers with_json_mode, and json: false for one call" do
      primary.enqueue({ text: '{"answer": 42}' }, { text: "plain" })
      chat = create_chat.with_json_mode
      expect(chat.ask("The answer?").json).to eq("answer" => 42)
      expect(primary.requests.last.json["response_format"]).to eq("type" => "json_object")
      expect(chat.ask("And in words?", json: false).content).to eq("plain")
      expect(primary.requests.last.json).not_to include("response_format")
    end

    it "sends with_temperature and with_max_tokens, and reads them back" do
      chat = create_chat.with_temperature(0.25).with_max_tokens(64)
      chat.ask("Hi")
      expect(primary.requests.last.json.values_at("temperature", "max_tokens")).to eq([0.25, 64])
      expect([chat.temperature, chat.max_tokens, chat.backup?]).to eq([0.25, 64, true])
    end

    it "takes a plain chat's options in #ask: scrub: false, a Configuration option" do
      LlmFailover.configuration.scrubber = LlmFailover::Scrubber.default
      card = "4111 1111 1111 1111"
      chat = create_chat
      chat.ask("card #{card}")
      expect(sent_messages(primary.requests.last).last).to eq(["user", "card [CARD_1]"])
      chat.ask("again #{card}", scrub: false)
      expect(sent_messages(primary.requests.last).last).to eq(["user", "again #{card}"])

      primary.enqueue({ error: :server }, { error: :server })
      expect { chat.ask("once", max_retries: 0, backup_model: nil) }
        .to raise_error(ArgumentError, /:backup_model: the record's own/)
      chat.ask("once", max_retries: 0)
      expect([primary.request_count, backup.request_count]).to eq([3, 1]) # no retry of the primary
      expect { chat.ask("x", nonsense: 1) }.to raise_error(ArgumentError, "unknown keyword: :nonsense")
    end

    it "takes a plain chat's options in acts_as_llm_chat and llm_config" do
      stub_const("UnscrubbedChat", Class.new(ActiveRecord::Base) do
        self.table_name = "chats"
        acts_as_llm_chat message_class: "Message", foreign_key: "chat_id", scrub: false
      end)
      LlmFailover.configuration.scrubber = LlmFailover::Scrubber.default
      UnscrubbedChat.create!(model: "gpt-4o", provider: "openai").ask("card 4111 1111 1111 1111")
      expect(sent_messages(primary.requests.last).last).to eq(["user", "card 4111 1111 1111 1111"])

      chat = create_chat
      chat.llm_config = { scrub: false }
      chat.ask("card 4111 1111 1111 1111")
      expect(sent_messages(primary.requests.last).last).to eq(["user", "card 4111 1111 1111 1111"])
    end
  end

  describe "#with_model" do
    it "saves the new target and keeps the messages" do
      primary.enqueue({ text: "first" }, { text: "second" })
      chat = create_chat
      chat.ask("One")
      chat.with_model("gpt-4o-mini", backup_model: nil, backup_provider: nil)
      reloaded = Chat.find(chat.id)
      expect(reloaded.attributes.values_at("model", "provider", "backup_model", "backup_provider"))
        .to eq(["gpt-4o-mini", "openai", nil, nil])

      reloaded.ask("Two")
      expect(primary.requests.last.json["model"]).to eq("gpt-4o-mini")
      expect(sent_messages(primary.requests.last)).to eq([%w[user One], %w[assistant first], %w[user Two]])
      expect(rows(chat).last.model).to eq("gpt-4o-mini")
    end

    it "refuses an unknown provider before writing anything" do
      chat = create_chat
      expect { chat.with_model("x", provider: :nope) }.to raise_error(LlmFailover::ConfigurationError, /nope/)
      expect(Chat.find(chat.id).model).to eq("gpt-4o")
    end
  end

  describe "quota from the database" do
    def answer_row(chat, model:, provider: "openai", status: "complete", created_at: Time.current, tokens: [1, 1])
      Message.create!(chat: chat, role: "assistant", content: "x", model: model, provider: provider, status: status,
                      created_at: created_at, input_tokens: tokens[0], output_tokens: tokens[1])
    end

    it "counts this month's completed answers of the chat's model on its provider, in every chat" do
      chat = create_chat(quota: 100)
      other = create_chat
      answer_row(chat, model: "gpt-4o")
      answer_row(other, model: "gpt-4o-2024-08-06") # the dated snapshot a provider reports
      answer_row(other, model: "gpt-4o", tokens: [100, 50])
      answer_row(chat, model: "gpt-4o-mini")                     # another model
      answer_row(chat, model: "gpt-4o", provider: "azure")        # another provider
      answer_row(chat, model: "gpt-4o", status: "failed")         # never answered
      answer_row(chat, model: "gpt-4o", created_at: Time.current.beginning_of_month - 1) # last month

      expect(chat.llm_quota_used).to eq(3)
    end

    it "sends the call to the backup once the quota is used up, and to the primary before" do
      chat = create_chat(quota: 2)
      answer_row(chat, model: "gpt-4o")
      chat.ask("First")
      expect([primary.request_count, backup.request_count]).to eq([1, 0])

      chat.ask("Second")
      expect([primary.request_count, backup.request_count]).to eq([1, 1])
      expect(rows(chat).last.provider).to eq("anthropic")
    end

    it "treats a quota of 0 or nil as unlimited without counting" do
      chat = create_chat(quota: 0)
      statements = sql_during { expect(chat.llm_quota_used).to eq(0) }
      expect(statements).to be_empty
    end

    it "sums tokens with quota_by: :tokens, and counts one chat with quota_scope: :chat" do
      token_chat = Class.new(ActiveRecord::Base) do
        self.table_name = "chats"
        def self.name = "TokenChat"
        acts_as_llm_chat message_class: "Message", foreign_key: "chat_id", quota_by: :tokens, quota_scope: :chat
      end
      chat = token_chat.create!(model: "gpt-4o", provider: "openai", quota: 1000)
      other = create_chat
      answer_row(Chat.find(chat.id), model: "gpt-4o", tokens: [100, 20])
      answer_row(Chat.find(chat.id), model: "gpt-4o", tokens: [nil, 5])
      answer_row(other, model: "gpt-4o", tokens: [300, 300])
      expect(chat.llm_quota_used).to eq(125)
    end
  end

  describe "the app's transactions" do
    before { LlmFailover.configuration.usage_log = attempt_log }

    it "commits the turn with the app's transaction" do
      chat = create_chat
      Chat.transaction { chat.ask("Inside") { |_c| } }
      expect(raw_rows("SELECT role, status FROM messages WHERE chat_id = ? ORDER BY id", chat.id).map(&:values))
        .to eq([%w[user complete], %w[assistant complete]])
    end

    it "rolls the turn back with it, while the attempt rows stay" do
      primary.enqueue({ error: :server })
      LlmFailover.configuration.max_retries = 1
      chat = create_chat
      Chat.transaction do
        chat.ask("Inside") { |_c| }
        raise ActiveRecord::Rollback
      end
      expect(raw_rows("SELECT COUNT(*) AS n FROM messages").first["n"]).to eq(0)
      attempts = raw_rows("SELECT attempt, success FROM llm_failover_attempts ORDER BY attempt")
      expect(attempts.map(&:values)).to eq([[1, 0], [2, 1]])
    end

    it "keeps attempt rows once through a rolled-back savepoint inside a committed transaction" do
      chat = create_chat
      Chat.transaction do
        Chat.transaction(requires_new: true) do
          chat.ask("Nested")
          raise ActiveRecord::Rollback
        end
      end
      expect(raw_rows("SELECT COUNT(*) AS n FROM llm_failover_attempts").first["n"]).to eq(1)
      expect(raw_rows("SELECT COUNT(*) AS n FROM messages").first["n"]).to eq(0)
    end
  end

  describe "configurable names" do
    before(:all) do
      ActiveRecord::Base.connection_pool.with_connection do |c|
        c.create_table(:conversations, force: true) do |t|
          t.string :llm_model
          t.string :llm_provider
          t.string :backup_model
          t.string :backup_provider
          t.integer :quota
          t.string :feature
          t.timestamps
        end
        c.create_table(:utterances, force: true) do |t|
          t.references :conversation, null: false
          t.string :speaker, null: false
          t.text :body
          t.string :model
          t.string :provider
          t.string :state, null: false, default: "complete"
          t.integer :input_tokens
          t.integer :output_tokens
          t.timestamps
        end
      end
      conversation = Class.new(ActiveRecord::Base) do
        def self.name = "Conversation"
        acts_as_llm_chat messages: :utterances, message_class: "Utterance",
                         columns: { model: "llm_model", provider: "llm_provider" }
      end
      utterance = Class.new(ActiveRecord::Base) do
        def self.name = "Utterance"
        acts_as_llm_message chat: :conversation, chat_class: "Conversation",
                            columns: { role: "speaker", content: "body", status: "state" }
      end
      stub_const = ->(name, klass) { Object.const_set(name, klass) }
      stub_const.call(:Conversation, conversation)
      stub_const.call(:Utterance, utterance)
    end

    after(:all) do
      Object.send(:remove_const, :Conversation)
      Object.send(:remove_const, :Utterance)
    end

    it "stores and reads the conversation through the configured association and columns" do
      primary.enqueue({ chunks: ["a ", "b"], cut_after: 1 })
      backup.enqueue({ text: "from backup" })
      conversation = Conversation.create!(llm_model: "gpt-4o", llm_provider: "openai",
                                          backup_model: "claude-sonnet-4-6", backup_provider: "anthropic")
      conversation.ask("Hello") { |_c| }
      stored = Utterance.where(conversation_id: conversation.id).order(:id)
      expect(stored.map { |u| [u.speaker, u.body, u.state, u.provider] })
        .to eq([["user", "Hello", "complete", nil], ["assistant", "from backup", "complete", "anthropic"]])
      expect(stored.map { |u| [u.role, u.content, u.status] })
        .to eq([%w[user Hello complete], ["assistant", "from backup", "complete"]])
      expect(conversation.utterances.last).to be_complete
    end

    it "rejects a column it does not know" do
      expect do
        Class.new(ActiveRecord::Base) { acts_as_llm_message columns: { colour: "c" } }
      end.to raise_error(LlmFailover::ConfigurationError, /colour/)
    end
  end

  describe "loading" do
    let(:ruby) { [RbConfig.ruby, "-I", File.expand_path("../../../lib", __dir__)] }

    it "keeps ActiveRecord out of a plain script, and the Rails generator out of the integration" do
      plain = IO.popen([*ruby, "-e", 'require "llm_failover"; print defined?(ActiveRecord).inspect'], &:read)
      expect(plain).to eq("nil")
      integration = IO.popen([*ruby, "-e", 'require "llm_failover/active_record"; ' \
                                           'print [defined?(ActiveRecord::Base), defined?(Rails), ' \
                                           "defined?(LlmFailover::Generators)].inspect"], &:read)
      expect(integration).to eq('["constant", nil, nil]')
    end
  end
end
