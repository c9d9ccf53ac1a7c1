# frozen_string_literal: true

require_relative "../../active_record/ar_spec_helper"

# Attachments in a messages table's attachments_data column (issue 28): stored once
# with the user row, read back for every call, resent by complete from a freshly
# loaded record (another process's view).
ArSpec.describe "Attachments on a chat record" do
  include_context "with fake providers"

  png = ("\x89PNG\r\n\x1A\n".b + "pixels" * 8).freeze
  pdf = "%PDF-1.4\n%%EOF\n".b.freeze

  def create_chat
    Chat.create!(model: "gpt-4o", provider: "openai", backup_model: "claude-sonnet-4-6", backup_provider: "anthropic")
  end

  it "stores an image and a PDF once with the user row; complete on a reloaded record sends them to the backup" do
    LlmFailover.configuration.max_retries = 0
    primary.default = { error: :server }
    backup.enqueue({ error: :server })
    chat = create_chat
    expect { chat.ask("Both?", with: [{ data: png, mime_type: "image/png", filename: "p.png" }, StringIO.new(pdf)]) }
      .to raise_error(LlmFailover::ServerError)
    user = Message.where(chat_id: chat.id, role: "user").sole
    stored = JSON.parse(raw_message(user.id)["attachments_data"])
    expect(stored.map { |a| [a["mime_type"], a["filename"], a["data"].unpack1("m0")] })
      .to eq([["image/png", "p.png", png], ["application/pdf", nil, pdf]])

    backup.enqueue({ text: "a picture and a PDF" })
    reply = Chat.find(chat.id).complete
    expect(reply.provider).to eq(:anthropic)
    expect(backup.requests.last.attachments.map { |a| [a.part["type"], a.data] })
      .to eq([["image", png], ["document", pdf]])
    expect(Message.where(chat_id: chat.id, role: "user").count).to eq(1)
    # The record reads its files back in canonical form (the chat UI serves them so).
    expect(Message.find(user.id).llm_attachments.map { |a| [a.mime_type, a.filename, a.data] })
      .to eq([["image/png", "p.png", png], ["application/pdf", nil, pdf]])
    expect(Message.where(chat_id: chat.id, role: "assistant").last.llm_attachments).to eq([])
  end

  it "refuses attachments for a table without a place for them, before writing the row" do
    ActiveRecord::Base.connection.remove_column(:messages, :attachments_data)
    Message.reset_column_information
    chat = create_chat
    expect { chat.ask("See", with: { data: png, mime_type: "image/png" }) }
      .to raise_error(ArgumentError, /messages cannot keep attachments: add a text column attachments_data/)
    expect(Message.where(chat_id: chat.id).count).to eq(0)
  ensure
    ActiveRecord::Base.connection.add_column(:messages, :attachments_data, :text)
    Message.reset_column_information
  end
end
