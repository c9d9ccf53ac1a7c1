# frozen_string_literal: true

require_relative "ar_spec_helper"
require "llm_failover/report"

# A target left out because it cannot take the message's attachments (issue 28): its
# attempt row says so (skipped, AttachmentRefusedError, the file and the limit), and
# the report counts it neither as a provider's failure, nor as a call routed around
# an open circuit, nor as a save by the backup.
ArSpec.describe "Attempt rows of a target that cannot take the attachments" do
  include_context "with fake providers"

  pdf = "%PDF-1.4\n%%EOF\n".b.freeze

  before do
    LlmFailover.configure do |c|
      c.provider :openai, api: :openai, api_key: FakeProviderHelpers::PRIMARY_KEY,
                          base_url: primary.base_url(:openai), documents: false
      c.usage_log = attempt_log
    end
  end

  it "writes the skip as a row and leaves it out of the failures, circuits and saves" do
    backup.enqueue({ text: "read it" })
    chat = Chat.create!(model: "gpt-4o", provider: "openai", backup_model: "claude-sonnet-4-6",
                        backup_provider: "anthropic")
    reply = chat.ask("Read", with: { data: pdf, mime_type: "application/pdf", filename: "r.pdf" })
    expect(reply.provider).to eq(:anthropic)

    rows = LlmFailover::ActiveRecord::Attempt.order(:attempt).to_a
    expect(rows.map { |r| [r.attempt, r.provider, r.success, r.skipped, r.error_class, r.http_status] })
      .to eq([[1, "openai", false, true, "LlmFailover::AttachmentRefusedError", nil],
              [2, "anthropic", true, false, nil, 200]])
    expect(rows[0].error_message).to eq('attachment "r.pdf": the target takes no PDFs (documents: false)')
    expect(primary.request_count).to eq(0)

    report = LlmFailover::Report.new
    expect(report.failure_rates.map { |r| [r.provider, r.failures] }).to eq([["anthropic", 0]])
    expect(report.open_circuits).to be_empty
    expect(report.saves).to be_empty
    expect(report.summary).to include(requests: 1, failures: 0, lost: 0, routed_around: 0)
  end

  it "counts a call no target could take as lost (no answer), though no provider failed" do
    LlmFailover.configure do |c|
      c.provider :anthropic, api: :anthropic, api_key: FakeProviderHelpers::BACKUP_KEY,
                             base_url: backup.base_url(:anthropic), images: false
    end
    two = Chat.create!(model: "gpt-4o", provider: "openai", backup_model: "claude-sonnet-4-6",
                       backup_provider: "anthropic")
    one = Chat.create!(model: "claude-sonnet-4-6", provider: "anthropic")
    files = [{ data: "\x89PNG\r\n\x1A\ntiny".b, mime_type: "image/png" }, { data: pdf, mime_type: "application/pdf" }]
    expect { two.ask("Both", with: files) }.to raise_error(LlmFailover::AttachmentRefusedError)
    expect { one.ask("Both", with: files.first) }.to raise_error(ArgumentError) # the input check: no target takes it
    # The chat's targets changed after the ask: complete meets a target that cannot take the image.
    one = Chat.create!(model: "gpt-4o", provider: "openai")
    primary.enqueue({ text: "an image" })
    one.ask("Image", with: files.first) { |_c| } # answered by the primary
    one.update!(model: "claude-sonnet-4-6", provider: "anthropic")
    expect { Chat.find(one.id).complete }.to raise_error(LlmFailover::AttachmentRefusedError)

    expect(LlmFailover::ActiveRecord::Attempt.where(error_class: "LlmFailover::AttachmentRefusedError").count).to eq(3)
    expect(LlmFailover::Report.new.summary).to include(requests: 3, failures: 0, lost: 2)
  end
end
