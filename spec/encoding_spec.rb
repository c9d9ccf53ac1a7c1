# frozen_string_literal: true

require "spec_helper"

# Issue 15, probe 2: a prompt's encoding was ignored (Latin-1 reached the provider as
# U+FFFD, invalid UTF-8 was replaced silently while the chat kept the original bytes,
# UTF-16 raised Encoding::CompatibilityError from a regexp). Text that can be converted
# to UTF-8 is; the rest is refused before anything is stored.
RSpec.describe "Text a chat is given, in any encoding" do
  include_context "with fake providers"

  def sent_text(request = primary.requests.last)
    sent_messages(request).last[1]
  end

  def sent_system(request = primary.requests.last)
    system = request.json.fetch("messages").find { |m| m["role"] == "system" }
    system && system["content"]
  end

  it "sends and stores a Latin-1 prompt as UTF-8" do
    chat = failover_chat
    chat.ask("café crème".encode("ISO-8859-1"))
    expect(sent_text).to eq("café crème")
    stored = chat.messages.first.content
    expect([stored, stored.encoding]).to eq(["café crème", Encoding::UTF_8])
  end

  it "sends UTF-16 prompts (with a BOM, or with the byte order in the encoding's name)" do
    chat = failover_chat
    chat.ask("héllo wörld".encode("UTF-16"))
    expect(sent_text).to eq("héllo wörld")
    chat.ask("ça va".encode("UTF-16LE"))
    expect(sent_text).to eq("ça va")
  end

  it "reads a binary String holding UTF-8 as UTF-8" do
    failover_chat.ask("naïve".b)
    expect(sent_text).to eq("naïve")
  end

  it "refuses invalid UTF-8 before anything is stored, naming the byte offset" do
    chat = failover_chat
    expect { chat.ask("abc\xFFdef") }
      .to raise_error(ArgumentError, "invalid UTF-8 in the prompt: byte 0xFF at byte offset 3")
    expect(chat.messages).to be_empty
    expect(primary.request_count).to eq(0)
    chat.ask("still works")
    expect(sent_messages(primary.requests.last)).to eq([["user", "still works"]])
  end

  it "refuses bytes that are not text in their own encoding" do
    chat = failover_chat
    expect { chat.ask("ab\x82\xA0\x81".dup.force_encoding("Shift_JIS")) }
      .to raise_error(ArgumentError, "cannot convert the prompt from Shift_JIS to UTF-8: byte 0x81 at byte offset 4")
    expect { chat.ask("ok".encode("UTF-16LE") + "\x00\xD8".dup.force_encoding("UTF-16LE")) }
      .to raise_error(ArgumentError, /from UTF-16LE to UTF-8: bytes 0x00 0xD8 at byte offset 4/)
    expect(chat.messages).to be_empty
  end

  it "converts instructions, from with_instructions and from system:" do
    failover_chat.with_instructions("Réponds en français.".encode("ISO-8859-1")).ask("Salut")
    expect(sent_system).to eq("Réponds en français.")
    LlmFailover.chat(model: "gpt-4o", provider: :openai, system: "Sé breve.".encode("UTF-16")).ask("Hola")
    expect(sent_system).to eq("Sé breve.")
  end

  it "refuses instructions that are not text, storing nothing, and later calls work" do
    chat = failover_chat
    expect { chat.with_instructions("Be \xC3brief") }
      .to raise_error(ArgumentError, "invalid UTF-8 in the instructions: byte 0xC3 at byte offset 3")
    expect { LlmFailover.chat(model: "gpt-4o", provider: :openai, system: "\xFF") }
      .to raise_error(ArgumentError, /byte 0xFF at byte offset 0/)
    expect(chat.messages).to be_empty
    chat.ask("Hi")
    expect(sent_system).to be_nil
  end

  it "keeps the old checks: a String, not blank" do
    expect { failover_chat.ask(:hi) }.to raise_error(ArgumentError, "the prompt must be a String, got Symbol")
    expect { failover_chat.ask(" \n".encode("UTF-16LE")) }.to raise_error(ArgumentError, "the prompt must not be empty")
    expect { failover_chat.with_instructions("  ") }.to raise_error(ArgumentError, "the instructions must not be empty")
  end

  # Probe 1's rule: nothing stored that the next call refuses. U+0000 is valid JSON
  # (\u0000); the Ruby side accepts it, the engine must send it.
  it "sends a NUL in instructions and a prompt as \\u0000, to both APIs, and later asks still work" do
    chat = failover_chat.with_instructions("Be brief.\u0000")
    chat.ask("abc\u0000def")
    expect(primary.requests.last.body).to include("abc\\u0000def")
    expect(sent_system).to eq("Be brief.\u0000")
    expect(sent_text).to eq("abc\u0000def")
    chat.ask("next")
    expect(sent_text).to eq("next")

    claude = LlmFailover.chat(model: "claude-sonnet-4-6", provider: :anthropic, system: "be\u0000brief")
    claude.ask("x\u0000y")
    expect(backup.requests.last.json["system"]).to eq("be\u0000brief")
    expect(sent_text(backup.requests.last)).to eq("x\u0000y")
  end
end
