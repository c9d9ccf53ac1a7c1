# frozen_string_literal: true

require "spec_helper"
require "support/file_server"

# Attachment::Selection: a call's with: checked against the chat's targets by the
# core's rule of what each takes, before anything is stored.
RSpec.describe LlmFailover::Attachment::Selection do
  let(:png_path) { File.expand_path("../../fixtures/files/photo.png", __dir__) }
  let(:pdf_path) { File.expand_path("../../fixtures/files/report.pdf", __dir__) }

  def configure(**openai_limits)
    LlmFailover.configure do |c|
      c.provider :openai, api: :openai, api_key: "sk-test", base_url: "http://127.0.0.1:9/v1", **openai_limits
      c.provider :anthropic, api: :anthropic, api_key: "sk-ant-test", base_url: "http://127.0.0.1:9/v1"
    end
  end

  def openai
    LlmFailover.configuration.providers.fetch(:openai).target("gpt-4o")
  end

  def anthropic
    LlmFailover.configuration.providers.fetch(:anthropic).target("claude-sonnet-4-6")
  end

  def prepare(with, targets)
    described_class.prepare(with, targets: targets, allow_private: true)
  end

  before { configure }

  describe ".prepare" do
    it "makes canonical attachments of one source or a list, frozen" do
      one = prepare(png_path, [openai])
      two = prepare([png_path, pdf_path], [openai])

      expect(one).to be_frozen
      expect(one.map { |a| [a.class, a.mime_type, a.name] }).to eq([[LlmFailover::Attachment, "image/png", "photo.png"]])
      expect(two.map(&:mime_type)).to eq(%w[image/png application/pdf])
      expect(prepare([], [openai])).to eq([]).and be_frozen
    end

    it "refuses a file no target takes, naming it, and takes one that only a backup takes" do
      configure(images: false)

      expect { prepare(png_path, [openai]) }.to raise_error(ArgumentError, /photo\.png/)
      expect(prepare(png_path, [openai, anthropic]).map(&:name)).to eq(%w[photo.png])
    end

    it "refuses more files than any target takes with one message, before reading them" do
      configure(max_attachments: 1)

      expect { prepare([png_path, "/no/such/file.pdf"], [openai]) }
        .to raise_error(ArgumentError, /2 attachments with one message, over openai\/gpt-4o's limit of 1 \(max_attachments\)/)
    end

    it "refuses a file over every target's size limit" do
      configure(max_attachment_bytes: 100)
      LlmFailover.configure do |c|
        c.provider :anthropic, api: :anthropic, api_key: "sk-ant-test", base_url: "http://127.0.0.1:9/v1",
                               max_attachment_bytes: 100
      end

      expect { prepare(png_path, [openai, anthropic]) }.to raise_error(ArgumentError, /photo\.png/)
    end

    context "with URL attachments" do
      let(:files) do
        FileServer.new("/report.pdf" => [200, { "content-type" => "application/pdf" }, File.binread(pdf_path)],
                       "/photo.png" => [200, { "content-type" => "image/png" }, File.binread(png_path)])
      end

      after { files.stop }

      it "keeps a URL where every target that takes the file takes its URL" do
        list = prepare(files.url("/photo.png"), [openai, anthropic])

        expect([list.first.url, list.first.data]).to eq([files.url("/photo.png"), nil])
        expect(files.hits["/photo.png"]).to eq(0)
      end

      it "downloads once a URL a target needs the bytes of (OpenAI file parts take no URL)" do
        list = prepare(files.url("/report.pdf"), [openai, anthropic])

        expect(list.first.data).to eq(File.binread(pdf_path))
        expect(files.hits["/report.pdf"]).to eq(1)
      end
    end
  end

  describe ".refusal" do
    it "is nil for a file the target takes, else why and a message naming the file and target" do
      configure(documents: false)
      pdf = LlmFailover::Attachment.from(pdf_path)

      expect(described_class.refusal(anthropic, pdf)).to be_nil
      kind, message = described_class.refusal(openai, pdf)
      expect(kind).to eq(:kind)
      expect(message).to include("report.pdf", "openai/gpt-4o")
    end
  end

  describe ".stored" do
    it "reads a stored message's attachments back in canonical form" do
      store = LlmFailover::MemoryStore.new
      attachments = prepare(png_path, [openai])
      message = store.add_user("look", attachments: attachments)

      expect(described_class.stored(store, message)).to eq(attachments)
      expect(described_class.stored(SpecListStore.new, SpecListStore::Row.new(role: "user"))).to eq([])
    end
  end

  describe ".engine_list" do
    it "is nil when no message has attachments, else one list of Engine::Attachments per message" do
      png = prepare(png_path, [openai]).first

      expect(described_class.engine_list([[], []])).to be_nil
      list = described_class.engine_list([[], [png]])
      expect(list.map { |m| m.map(&:class) }).to eq([[], [LlmFailover::Engine::Attachment]])
      expect(list.last.first.mime_type).to eq("image/png")
      expect(list.last.first.base64).to eq(png.base64)
    end
  end
end
