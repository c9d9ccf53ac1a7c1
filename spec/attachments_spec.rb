# frozen_string_literal: true

require "spec_helper"
require "stringio"
require "tempfile"
require_relative "support/file_server"

# Images and PDFs with a user message (issue 28): the canonical Attachment, its
# rendering per protocol through the core, failover between protocols, limits, URL
# downloads and complete after a failure. :openai is the primary (OpenAI protocol),
# :anthropic the backup (Anthropic protocol), each a FakeProvider.
RSpec.describe "Attachments" do
  include_context "with fake providers"

  PNG = ("\x89PNG\r\n\x1A\n".b + "\x00\x00\x00\rIHDR".b + "pixels" * 10).freeze
  PDF = "%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n%%EOF\n".b.freeze

  def png_file
    file = Tempfile.new(["photo", ".png"])
    file.binmode
    file.write(PNG)
    file.flush
    file
  end

  def pdf_file
    file = Tempfile.new(["report", ".pdf"])
    file.binmode
    file.write(PDF)
    file.flush
    file
  end

  def last_request(fake)
    fake.requests.last
  end

  describe LlmFailover::Attachment do
    it "reads a path, an IO, a Hash and a blob-like object to one canonical form with a content digest" do
      file = png_file
      io = StringIO.new(PDF)
      blob = Struct.new(:download, :content_type, :filename, :byte_size).new(PDF, "application/pdf", "blob.pdf", PDF.bytesize)
      from_path = described_class.from(file.path)
      from_hash = described_class.from({ data: PNG, mime_type: "image/png", filename: "x.png" })

      expect(from_path.mime_type).to eq("image/png")
      expect(from_path.filename).to eq(File.basename(file.path))
      expect(from_path.digest).to eq(Digest::SHA256.hexdigest(PNG))
      expect(from_hash.digest).to eq(from_path.digest)
      expect(described_class.from(io).mime_type).to eq("application/pdf")
      expect(described_class.from(blob)).to have_attributes(mime_type: "application/pdf", filename: "blob.pdf", data: PDF)
      expect(described_class.from(blob).blob).to equal(blob) # a store with ActiveStorage attaches it as it is
      expect(described_class.from("https://example.com/a/photo.jpg?sig=1")).to have_attributes(
        mime_type: "image/jpeg", data: nil, url: "https://example.com/a/photo.jpg?sig=1"
      )
    end

    it "refuses a type that is not an image or a PDF, naming the file" do
      expect { described_class.from({ data: "plain text", filename: "notes.txt" }) }
        .to raise_error(ArgumentError, /"notes.txt" is not a PNG, JPEG, GIF, WebP image or a PDF/)
      expect { described_class.from({ data: PNG, mime_type: "application/pdf", filename: "x.pdf" }) }
        .to raise_error(ArgumentError, %r{"x.pdf" is declared application/pdf but its bytes are image/png})
      expect { described_class.from("https://example.com/page.html") }
        .to raise_error(ArgumentError, /"page.html".*give \{ url:, mime_type: \}/)
    end

    it "refuses a file over the size limit before reading it, naming the file and the limit" do
      expect { described_class.from(png_file.path, max_bytes: 10) }
        .to raise_error(ArgumentError, /is #{PNG.bytesize} bytes, over the limit of 10 bytes/)
    end
  end

  [false, true].each do |streamed|
    context(streamed ? "streamed" : "not streamed") do
      def ask(chat, text, **options)
        return chat.ask(text, **options) unless streamed_call?

        chunks = []
        reply = chat.ask(text, **options) { |c| chunks << c }
        expect(chunks).not_to be_empty
        reply
      end

      define_method(:streamed_call?) { streamed }

      it "sends an image and a PDF as OpenAI content parts" do
        primary.enqueue({ text: "a photo and a report" })
        reply = ask(LlmFailover.chat(model: "gpt-4o", provider: :openai), "What is in these?",
                    with: [png_file.path, pdf_file.path])

        expect(reply.content).to eq("a photo and a report")
        request = last_request(primary)
        parts = request.json["messages"].last["content"]
        expect(parts.first).to eq("type" => "text", "text" => "What is in these?")
        expect(parts[1]["type"]).to eq("image_url")
        expect(parts[1]["image_url"]["url"]).to start_with("data:image/png;base64,")
        expect(parts[2]["type"]).to eq("file")
        expect(parts[2]["file"]["filename"]).to end_with(".pdf")
        expect(request.attachments.map { |a| [a.kind, a.mime_type, a.data] })
          .to eq([[:image, "image/png", PNG], [:document, "application/pdf", PDF]])
      end

      it "sends an image and a PDF as Anthropic image and document blocks" do
        backup.enqueue({ text: "seen" })
        reply = ask(LlmFailover.chat(model: "claude-sonnet-4-6", provider: :anthropic), "Describe",
                    with: [{ data: PNG, mime_type: "image/png", filename: "x.png" }, StringIO.new(PDF)])

        expect(reply.content).to eq("seen")
        blocks = last_request(backup).json["messages"].last["content"]
        expect(blocks.map { |b| b["type"] }).to eq(%w[image document text])
        expect(blocks[0]["source"]).to include("type" => "base64", "media_type" => "image/png")
        expect(blocks[1]["source"]).to include("type" => "base64", "media_type" => "application/pdf")
        expect(blocks[2]).to eq("type" => "text", "text" => "Describe")
        expect(last_request(backup).attachments.map(&:data)).to eq([PNG, PDF])
      end

      it "fails over from OpenAI to Anthropic with an image and a PDF, each in its own form" do
        primary.default = { error: :server }
        backup.enqueue({ text: "from the backup" })
        reply = ask(failover_chat(max_retries: 0), "Both", with: [png_file.path, pdf_file.path])

        expect(reply.provider).to eq(:anthropic)
        expect(primary.requests.last.attachments.map { |a| a.part["type"] }).to eq(%w[image_url file])
        expect(backup.requests.last.attachments.map { |a| a.part["type"] }).to eq(%w[image document])
        expect(backup.requests.last.attachments.map(&:data)).to eq([PNG, PDF])
      end
    end
  end

  it "fails over from Anthropic to OpenAI with an image and a PDF" do
    backup.default = { error: :server }
    primary.enqueue({ text: "from openai" })
    chat = LlmFailover.chat(model: "claude-sonnet-4-6", provider: :anthropic, backup_model: "gpt-4o",
                            backup_provider: :openai, max_retries: 0)
    reply = chat.ask("Both", with: [png_file.path, pdf_file.path])

    expect(reply.provider).to eq(:openai)
    expect(backup.requests.last.attachments.map { |a| a.part["type"] }).to eq(%w[image document])
    expect(primary.requests.last.attachments.map { |a| [a.part["type"], a.data] })
      .to eq([["image_url", PNG], ["file", PDF]])
  end

  it "complete after a failed ask resends the stored attachments, stored once" do
    primary.default = { error: :server }
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai, max_retries: 0)
    expect { chat.ask("Read it", with: pdf_file.path) }.to raise_error(LlmFailover::ServerError)
    expect(chat.messages.first.attachments.map(&:data)).to eq([PDF])

    primary.default = { text: "read" }
    expect(chat.complete.content).to eq("read")
    expect(primary.requests.last.attachments.map(&:data)).to eq([PDF])
    expect(chat.messages.count { |m| m.role == "user" }).to eq(1)
  end

  it "encodes an attachment's bytes as base64 once, however many calls send it" do
    primary.default = { error: :server }
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai, max_retries: 1)
    expect { chat.ask("Read", with: pdf_file.path) }.to raise_error(LlmFailover::ServerError)
    stored = chat.messages.first.attachments.first
    encoded = stored.base64
    primary.default = { text: "read" }
    chat.complete

    expect(stored.base64).to be(encoded) # the same String, not one made per call
    expect(encoded).to be_frozen
    expect(primary.requests.map { |r| r.attachments.first.data }).to eq([PDF] * 3)
    from_column = LlmFailover::Attachment.from_base64([PDF].pack("m0"), mime_type: "application/pdf")
    expect(from_column.data).to eq(PDF)
    expect(from_column.base64).to be(from_column.base64).and eq([PDF].pack("m0"))
  end

  it "reads whether a store keeps attachments once per store class, not on every ask" do
    primary.default = { text: "ok" }
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
    chat.ask("See", with: { data: PNG, mime_type: "image/png" }) # the first ask of the process may read it
    looks = 0
    trace = TracePoint.new(:c_call) { |tp| looks += 1 if tp.method_id == :parameters }
    trace.enable { 3.times { chat.ask("See", with: { data: PNG, mime_type: "image/png" }) } }
    expect(looks).to eq(0)
    expect(primary.request_count).to eq(4)
  end

  describe "what a target takes" do
    let(:records) { [] }

    before do
      LlmFailover.configure do |c|
        c.provider :openai, api: :openai, api_key: FakeProviderHelpers::PRIMARY_KEY,
                            base_url: primary.base_url(:openai), documents: false, max_attachment_bytes: 64
        c.usage_log = ->(record) { records << record }
      end
    end

    def skipped_for_attachments(attempts)
      attempts.select { |a| a.skipped? && a.error_class == "LlmFailover::AttachmentRefusedError" }
    end

    [false, true].each do |streamed|
      it "leaves out a primary that takes no documents with a skipped record naming the file and the limit " \
         "(#{streamed ? 'streamed' : 'not streamed'}); the backup answers" do
        LlmFailover.configuration.circuit_threshold = 1
        backup.enqueue({ text: "pdf read" })
        chunks = []
        reply = failover_chat.ask("Read", with: pdf_file.path, &(streamed ? ->(c) { chunks << c } : nil))

        expect(reply.provider).to eq(:anthropic)
        expect(chunks.map(&:content).join).to eq("pdf read") if streamed
        expect(primary.request_count).to eq(0)
        expect(backup.requests.last.attachments.map(&:kind)).to eq([:document])
        expect(reply.attempts.map { |a| [a.attempt, a.provider, a.success?, a.skipped?, a.error_class] })
          .to eq([[1, :openai, false, true, "LlmFailover::AttachmentRefusedError"], [2, :anthropic, true, false, nil]])
        expect(reply.attempts.first.error_message)
          .to match(/attachment "report.*\.pdf": the target takes no PDFs \(documents: false\)/)
        expect(records.map(&:attempt)).to eq([1, 2]) # the usage log saw the skip too
        # Not a failure of the primary's: its circuit (threshold 1) stays closed.
        expect(LlmFailover.health.find { |h| h.provider.to_s == "openai" }&.state).not_to eq(:open)
        primary.enqueue({ text: "plain" })
        expect(failover_chat.ask("No file").provider).to eq(:openai)
      end
    end

    it "counts neither a skip nor a call no target can take against the primary's shared quota" do
      key = "tenant-#{rand(1 << 30)}"
      chat = -> { failover_chat(quota: 3, quota_key: key, quota_window: :day) }
      backup.enqueue({ text: "pdf read" })
      expect(chat.call.ask("Read", with: pdf_file.path).provider).to eq(:anthropic)
      LlmFailover.configure do |c|
        c.provider :anthropic, api: :anthropic, api_key: FakeProviderHelpers::BACKUP_KEY,
                               base_url: backup.base_url(:anthropic), images: false
      end
      small = { data: "\x89PNG\r\n\x1A\n".b + "tiny", mime_type: "image/png" } # the primary's alone
      expect { chat.call.ask("Both", with: [small, pdf_file.path]) }.to raise_error(LlmFailover::AttachmentRefusedError)
      expect(LlmFailover::Quota.live(key: key, limit: 3, window: :day).used).to eq(0)
      primary.enqueue({ text: "plain" })
      chat.call.ask("No file")
      expect(LlmFailover::Quota.live(key: key, limit: 3, window: :day).used).to eq(1)
    end

    it "leaves out a target whose per-file size limit the file is over" do
      backup.enqueue({ text: "big one" })
      big = { data: PNG + ("x" * 100), mime_type: "image/png", filename: "big.png" }
      reply = failover_chat.ask("Look", with: big)

      expect(reply.provider).to eq(:anthropic)
      expect(primary.request_count).to eq(0)
      expect(skipped_for_attachments(reply.attempts).map(&:error_message))
        .to eq(["attachment \"big.png\" is #{PNG.bytesize + 100} bytes, over the target's limit of 64 bytes " \
                "(max_attachment_bytes)"])
      expect(backup.requests.last.attachments.map(&:data)).to eq([big[:data]])
    end

    it "fails with AttachmentRefusedError, not retryable, when no target of the call takes every file" do
      alerts = []
      LlmFailover.configure do |c|
        c.on_chain_exhausted = ->(alert) { alerts << alert } # no provider failed: no alert
        c.provider :anthropic, api: :anthropic, api_key: FakeProviderHelpers::BACKUP_KEY,
                               base_url: backup.base_url(:anthropic), images: false
      end
      chat = failover_chat
      # Each file fits a target of the chat (the input is good), no target takes both.
      small = "\x89PNG\r\n\x1A\n".b + "tiny" # under the primary's 64 bytes
      expect { chat.ask("Both", with: [{ data: small, mime_type: "image/png", filename: "p.png" }, pdf_file.path]) }
        .to raise_error(LlmFailover::AttachmentRefusedError) { |e|
          expect(e).to be_a(LlmFailover::BadRequestError)
          expect(e.retryable?).to be(false)
          expect(e.message).to include("no target of the call can take the attachments",
                                       "takes no PDFs (documents: false)", "\"p.png\": the target takes no images")
          expect(e.attempts.map { |a| [a.provider, a.skipped?, a.error_class] })
            .to eq([[:openai, true, "LlmFailover::AttachmentRefusedError"],
                    [:anthropic, true, "LlmFailover::AttachmentRefusedError"]])
        }
      expect([primary.request_count, backup.request_count]).to eq([0, 0])
      expect(chat.messages.count { |m| m.role == "user" }).to eq(1) # stored once; complete meets the same limits
      expect { chat.complete }.to raise_error(LlmFailover::AttachmentRefusedError)
      expect(records.size).to eq(4)
      expect(alerts).to be_empty
    end

    it "refuses, before storing anything, a PDF no target takes" do
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
      expect { chat.ask("Read", with: pdf_file.path) }
        .to raise_error(ArgumentError, %r{report.*\.pdf.*openai/gpt-4o takes no PDFs \(documents: false\)})
      expect(chat.messages).to be_empty
      expect(primary.request_count).to eq(0)
    end

    it "refuses a file over every target's size limit and too many files, naming the limit" do
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
      big = { data: PNG + ("x" * 100), mime_type: "image/png", filename: "big.png" }
      expect { chat.ask("Look", with: big) }
        .to raise_error(ArgumentError, /"big.png" is #{PNG.bytesize + 100} bytes, over the limit of 64 bytes/)
      expect { chat.ask("Look", with: [png_file.path] * 21) }
        .to raise_error(ArgumentError,
                        %r{21 attachments with one message, over openai/gpt-4o's limit of 20 \(max_attachments\)})
      expect(chat.messages).to be_empty
    end

    it "checks files with check_attachments as ask would, storing and sending nothing (a form before its job)" do
      chat = failover_chat
      checked = chat.check_attachments([png_file.path, pdf_file.path])
      expect(checked.map(&:mime_type)).to eq(%w[image/png application/pdf]) # the backup takes the PDF
      solo = LlmFailover.chat(model: "gpt-4o", provider: :openai)
      expect { solo.check_attachments(pdf_file.path) }.to raise_error(ArgumentError, /takes no PDFs \(documents: false\)/)
      # An upload's size is refused as it is, before the bytes are read.
      upload = StringIO.new(PNG + ("x" * 100))
      expect { solo.check_attachments(upload) }
        .to raise_error(ArgumentError, /is #{PNG.bytesize + 100} bytes, over the limit of 64 bytes/)
      expect(upload.pos).to eq(0)
      expect(chat.messages + solo.messages).to be_empty
      expect(primary.request_count + backup.request_count).to eq(0)
    end
  end

  describe "what an Anthropic primary takes" do
    before do
      LlmFailover.configure do |c|
        c.provider :anthropic, api: :anthropic, api_key: FakeProviderHelpers::BACKUP_KEY,
                               base_url: backup.base_url(:anthropic), images: false, max_attachments: 1
      end
    end

    def anthropic_first
      LlmFailover.chat(model: "claude-sonnet-4-6", provider: :anthropic, backup_model: "gpt-4o",
                       backup_provider: :openai)
    end

    it "sends an image to the OpenAI backup when the Anthropic primary takes none, the skip recorded" do
      primary.enqueue({ text: "an image" })
      reply = anthropic_first.ask("See", with: { data: PNG, mime_type: "image/png", filename: "p.png" }) { |_c| }

      expect(reply.provider).to eq(:openai)
      expect(backup.request_count).to eq(0)
      expect(primary.requests.last.attachments.map { |a| a.part["type"] }).to eq(["image_url"])
      expect(reply.attempts.first).to have_attributes(provider: :anthropic, skipped?: true,
                                                      error_message: "attachment \"p.png\": the target takes no " \
                                                                     "images (images: false)")
    end

    it "leaves out the primary when the message has more files than its per-message limit" do
      primary.enqueue({ text: "two PDFs" })
      reply = anthropic_first.ask("Read", with: [pdf_file.path, pdf_file.path])

      expect(reply.provider).to eq(:openai)
      expect(reply.attempts.first.error_message)
        .to eq("2 attachments with one message, over the target's limit of 1 (max_attachments)")
      expect(primary.requests.last.attachments.map { |a| a.part["type"] }).to eq(%w[file file])
    end
  end

  describe "URL attachments" do
    let(:files) do
      FileServer.new(
        "/photo.png" => [200, { "content-type" => "image/png" }, PNG],
        "/report.pdf" => [200, { "content-type" => "application/pdf" }, PDF],
        "/moved.pdf" => [302, { "location" => "/report.pdf" }, ""],
        "/fake.pdf" => [200, { "content-type" => "text/html" }, "<html></html>"],
        "/drip.pdf" => [200, { "content-type" => "application/pdf", "x-pause" => "0.2" }, PDF.chars.first(12)]
      )
    end

    after { files.stop }

    it "sends a URL as a URL where the target takes one (Anthropic blocks, an OpenAI image_url)" do
      backup.enqueue({ text: "ok" })
      primary.enqueue({ text: "ok" })
      url = "https://files.example.com/photo.png"
      LlmFailover.chat(model: "claude-sonnet-4-6", provider: :anthropic).ask("See", with: url)
      LlmFailover.chat(model: "gpt-4o", provider: :openai).ask("See", with: url)

      expect(backup.requests.last.attachments.first.part["source"]).to eq("type" => "url", "url" => url)
      expect(primary.requests.last.attachments.first.part["image_url"]).to eq("url" => url)
    end

    it "downloads a PDF once for an OpenAI target (its file parts take no URL), a private host allowed explicitly" do
      LlmFailover.configuration.attachment_private_hosts = true
      primary.default = { error: :server }
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai, max_retries: 1)
      expect { chat.ask("Read", with: files.url("/moved.pdf")) }.to raise_error(LlmFailover::ServerError)
      primary.default = { text: "read" }
      chat.complete

      expect(primary.requests.map { |r| r.attachments.first.data }).to eq([PDF] * 3)
      expect(files.hits["/report.pdf"]).to eq(1) # once, for the ask, its retry and the complete
    end

    it "gives a download a whole-time limit, not only one per read (a server dripping its body)" do
      attachment = LlmFailover::Attachment.from(files.url("/drip.pdf"))
      fetch = LlmFailover::Attachment::Download.new(max_bytes: 1024, allow_private: true, timeout: 0.5)
      expect { fetch.call(attachment) }.to raise_error(ArgumentError, /drip.pdf" could not be downloaded: not done within 0.5 s/)
    end

    it "refuses hosts at addresses no public file is served from, NAT64's embedded IPv4 included" do
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
      %w[0.0.0.1 198.18.0.1 224.0.0.1 [64:ff9b::7f00:1] [::7f00:1] [fec0::1]].each do |host|
        expect { chat.ask("Read", with: "http://#{host}/report.pdf") }
          .to raise_error(ArgumentError, /could not be downloaded: the host resolves to .*a private or loopback address/)
      end
      expect(chat.messages).to be_empty
    end

    it "refuses a loopback host unless allowed, a wrong content type, and shows no credentials" do
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
      url = files.url("/report.pdf").sub("http://", "http://user:s3cret@") + "?token=SIGNED"
      expect { chat.ask("Read", with: url) }.to raise_error(ArgumentError) { |e|
        expect(e.message).to include("127.0.0.1", "a private or loopback address")
        expect(e.message).not_to include("s3cret", "SIGNED")
      }
      LlmFailover.configuration.attachment_private_hosts = true # a chat's configuration is copied when made
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
      expect { chat.ask("Read", with: files.url("/fake.pdf")) }
        .to raise_error(ArgumentError, %r{served as text/html, not an image or a PDF})
      expect(chat.messages).to be_empty
      expect(files.hits["/report.pdf"]).to eq(0)
    end
  end

  it "keys the response cache by the attachments' content digest" do
    LlmFailover.configuration.cache = LlmFailover::MemoryCache.new
    primary.default = { text: "fresh" }
    chat = -> { LlmFailover.chat(model: "gpt-4o", provider: :openai) }
    chat.call.ask("What?", with: { data: PNG, mime_type: "image/png" })
    chat.call.ask("What?", with: { data: PNG, mime_type: "image/png", filename: "renamed.png" })
    expect(primary.request_count).to eq(1)
    chat.call.ask("What?", with: { data: PNG + "other".b, mime_type: "image/png" })
    expect(primary.request_count).to eq(2)
  end
end
