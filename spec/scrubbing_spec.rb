# frozen_string_literal: true

require "spec_helper"

# What leaves the process is scrubbed, what is stored and shown is the user's text.
RSpec.describe "scrubbing a call" do
  include_context "with fake providers"

  CARD = "4111 1111 1111 1111"
  OTHER_CARD = "5555 5555 5555 4444"
  KEY = "sk-proj-4fJx9TqLm2VbN8cZ1rWs7YhK3pDe6GaU"

  let(:records) { [] }

  before do
    LlmFailover.configure do |c|
      c.scrubber = LlmFailover::Scrubber.default
      c.usage_log = ->(r) { records << r }
    end
  end

  def solo_chat(**options)
    LlmFailover.chat(model: "gpt-4o", provider: :openai, **options)
  end

  def sent_text(fake, index = -1)
    fake.requests[index].body
  end

  it "is off unless a scrubber is configured" do
    LlmFailover.configure { |c| c.scrubber = nil }
    primary.enqueue({ text: "ok" })
    solo_chat.ask("my card is #{CARD}")
    expect(sent_messages(primary.requests.last)).to eq([["user", "my card is #{CARD}"]])
    expect(records.last.scrubbed).to be_nil
  end

  it "sends placeholders, stores the original and restores the answer" do
    primary.enqueue({ text: "I will charge [CARD_1] now." })
    chat = solo_chat(system: "Never repeat the key #{KEY}")
    reply = chat.ask("Charge #{CARD}, key #{KEY}")

    request = primary.requests.last
    expect(sent_messages(request)).to eq([["system", "Never repeat the key [API_KEY_1]"],
                                          ["user", "Charge [CARD_1], key [API_KEY_1]"]])
    expect(request.body).not_to include(CARD, KEY)
    expect(reply.content).to eq("I will charge #{CARD} now.")
    expect(chat.messages.map(&:content)).to eq(["Never repeat the key #{KEY}", "Charge #{CARD}, key #{KEY}",
                                                "I will charge #{CARD} now."])
  end

  it "says in each attempt record how many values of each kind, never the values" do
    primary.enqueue({ error: :server }, { text: "ok" })
    solo_chat.ask("cards #{CARD} and #{OTHER_CARD}, again #{CARD}; key #{KEY}")
    expect(records.size).to eq(2)
    expect(records.map(&:scrubbed)).to all(eq("card" => 2, "api_key" => 1))
    logged = JSON.generate(records.map(&:to_h))
    expect(logged).to include('"scrubbed":{"card":2,"api_key":1}')
    expect(logged).not_to include(CARD, OTHER_CARD, KEY)
  end

  it "shows no value in the call's inspect, an error or the log" do
    log = StringIO.new
    LlmFailover.configure { |c| c.logger = Logger.new(log) }
    primary.enqueue({ error: :bad_request })
    chat = solo_chat
    error = begin
      chat.ask("card #{CARD}")
    rescue LlmFailover::Error => e
      e
    end
    texts = [error.message, error.inspect, error.attempts.map(&:to_h).to_s, log.string, records.map(&:inspect).join,
             LlmFailover::Scrubber::Session.new(LlmFailover::Scrubber.default).tap { |s| s.scrub(CARD) }.inspect]
    expect(texts.join).not_to include(CARD)
    expect(sent_messages(primary.requests.last)).to eq([["user", "card [CARD_1]"]])
  end

  it "says {} when the scrubber ran and found nothing" do
    primary.enqueue({ text: "ok" })
    solo_chat.ask("nothing to hide")
    expect(records.last.scrubbed).to eq({})
  end

  it "gives a value the same placeholder in every message of the call" do
    primary.enqueue({ text: "Noted [CARD_1]." }, { text: "Both noted." })
    chat = solo_chat
    chat.ask("First card #{CARD}")
    chat.ask("Second card #{OTHER_CARD}, and the first was #{CARD}")
    expect(sent_messages(primary.requests.last)).to eq(
      [["user", "First card [CARD_1]"], ["assistant", "Noted [CARD_1]."],
       ["user", "Second card [CARD_2], and the first was [CARD_1]"]]
    )
  end

  it "is skipped for a chat made with scrub: false" do
    primary.enqueue({ text: "ok" })
    solo_chat(scrub: false).ask("card #{CARD}")
    expect(sent_messages(primary.requests.last)).to eq([["user", "card #{CARD}"]])
    expect(records.last.scrubbed).to be_nil
  end

  describe "a streamed answer" do
    it "restores a placeholder split across chunks and never shows half of one" do
      primary.enqueue({ chunks: ["Charging ", "[CA", "RD_", "1]", " today [", "sic] [CARD_9]"], chunk_delay: 0.02 })
      chat = solo_chat
      chunks, sink = collect_chunks
      reply = chat.ask("Charge #{CARD}", &sink)

      texts = chunks.map(&:content)
      expect(texts.join).to eq("Charging #{CARD} today [sic] [CARD_9]")
      # A placeholder not of this call ([CARD_9]) passes as it is; no piece of [CARD_1] shows.
      expect(texts).to include(a_string_including(CARD))
      expect(texts.map { |t| t.sub("[CARD_9]", "") }.join).not_to match(/\[C|RD_|_1\]/)
      expect(chunks.map(&:index)).to eq((0...chunks.size).to_a)
      expect(reply.content).to eq(texts.join)
      expect(reply.chunk_count).to eq(chunks.size)
      expect(chat.messages.last.content).to eq(texts.join)
    end

    it "gives out the held back end before a reset, then restores the backup's answer" do
      primary.enqueue({ chunks: ["Charging ", "[CA", "RD_1] and more"], cut_after: 2, chunk_delay: 0.02 })
      backup.enqueue({ chunks: ["Backup charges ", "[CARD", "_1]"], chunk_delay: 0.02 })
      chat = failover_chat
      chunks, sink = collect_chunks
      reply = chat.ask("Charge #{CARD}", &sink)

      reset_at = chunks.index(&:reset?)
      expect(chunks[0...reset_at].map(&:content).join).to eq("Charging [CA")
      expect(chunks[(reset_at + 1)..].map(&:content).join).to eq("Backup charges #{CARD}")
      expect(reply.content).to eq("Backup charges #{CARD}")
      expect(chat.messages.last.content).to eq("Backup charges #{CARD}")
      expect(sent_messages(backup.requests.last)).to eq([["user", "Charge [CARD_1]"]])
    end
  end

  describe "any object with #scrub(text) -> [text, mapping]" do
    # Numbers every text from 1 and keys its mapping without brackets, as
    # thoughtbot's top_secret does (TopSecret::Text.filter(text): output, mapping).
    let(:per_text) do
      Class.new do
        def scrub(text)
          mapping = {}
          out = text.gsub(/\b[\w.]+@[\w.]+\.\w+\b/) do |address|
            key = mapping.key(address) || :"EMAIL_#{mapping.size + 1}"
            mapping[key] = address
            "[#{key}]"
          end
          [out, mapping]
        end
      end.new
    end

    it "is used, and its placeholders are renumbered so that one never means two values" do
      LlmFailover.configure { |c| c.scrubber = per_text }
      primary.enqueue({ text: "ok" }, { text: "Mail [EMAIL_2], copy [EMAIL_1]" })
      chat = solo_chat
      chat.ask("mail ann@example.com")
      reply = chat.ask("now bob@example.org and ann@example.com")
      expect(sent_messages(primary.requests.last)).to eq(
        [["user", "mail [EMAIL_1]"], ["assistant", "ok"], ["user", "now [EMAIL_2] and [EMAIL_1]"]]
      )
      expect(reply.content).to eq("Mail bob@example.org, copy ann@example.com")
      expect(records.last.scrubbed).to eq("email" => 2)
    end
  end

  describe "with the response cache" do
    before { LlmFailover.configure { |c| c.cache = LlmFailover::MemoryCache.new } }

    it "keys on the scrubbed text and restores a hit with this call's values" do
      primary.enqueue({ text: "Charged [CARD_1]." })
      first = solo_chat.ask("Charge #{CARD}")
      second = solo_chat.ask("Charge #{OTHER_CARD}")
      expect(primary.request_count).to eq(1)
      expect(first.content).to eq("Charged #{CARD}.")
      expect(second.cached?).to be(true)
      expect(second.content).to eq("Charged #{OTHER_CARD}.")
      expect(records.last.scrubbed).to eq("card" => 1)
    end
  end
end
